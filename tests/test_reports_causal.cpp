// The causal evidence of --ablation in the report (reports/html_causal.h): its sections, ranks and
// figures on hand-made heads.json with ablation findings, a report without them, markup in a
// masked-LM run, partial evidence, and the loss axes' ticks.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "reports/palette.h"
#include "reports/plots.h"
#include "reports/report_data.h"
#include "reports/report_writer.h"
#include "reports/text.h"
#include "tests/report_fixture.h"
#include "tests/report_test_support.h"

using namespace headscan;
using namespace headscan::testing;
namespace fs = std::filesystem;

namespace {

// A page without its inlined stylesheet and script, which name every feature of every page.
std::string page_markup(const fs::path& path) {
  std::string html = read_file(path);
  for (const auto& [open, close] : {std::pair<std::string, std::string>{"<style>", "</style>"},
                                    std::pair<std::string, std::string>{"<script data-headscan=\"main\">", "</script>"},
                                    std::pair<std::string, std::string>{"<script data-headscan=\"early\">", "</script>"}}) {
    const auto from = html.find(open);
    if (from != std::string::npos) html.erase(from, html.find(close, from) + close.size() - from);
  }
  return html;
}

std::string head_id(int layer, int head) { return "L" + std::to_string(layer) + "H" + std::to_string(head); }

// 1 + the number of heads of the fixture with a larger value (1 = the largest).
int expected_rank(double (*value)(int, int), int layers, int heads, int layer, int head) {
  int above = 0;
  for (int l = 0; l < layers; ++l) {
    for (int h = 0; h < heads; ++h) above += value(l, h) > value(layer, head);
  }
  return above + 1;
}

}  // namespace

TEST_CASE("the causal evidence of ablation is in the report", "[reports][e2e]") {
  constexpr int kLayers = 4, kHeads = 6;
  const Fixture fixture(kLayers, kHeads, FixtureText::plain, 4, 14, 12345, FixtureAblation::full);
  TempDir directory("ablation");
  write_reports(directory.path, fixture.heads, fixture.examples, fixture.probes, ReportOptions{});
  const ReportData data = read_report_data(fixture.heads);
  const auto& points = fixture.heads["ablation"]["pruning"]["points"];
  REQUIRE(points.size() == 11);

  SECTION("the causal scores are columns with their meaning and a fitting colour scale") {
    const ScoreColumn* importance = data.score("importance");
    const ScoreColumn* effect = data.score("ablation_loss");
    REQUIRE(importance);
    REQUIRE(effect);
    double most = 0, reach = 0;
    for (int layer = 0; layer < kLayers; ++layer) {
      for (int head = 0; head < kHeads; ++head) {
        most = std::max(most, fixture_importance(layer, head));
        reach = std::max(reach, std::abs(fixture_ablation_loss(layer, head)));
      }
    }
    CHECK(most < 1);  // so that 0..1, the scale of shares, would be wrong
    CHECK(importance->low == 0);
    CHECK(importance->high == Approx(most));
    CHECK(!importance->diverging);
    CHECK(effect->high == Approx(reach));
    CHECK(effect->low == Approx(-reach));
    CHECK(effect->diverging);
    CHECK(importance->meaning.find("Michel et al. 2019") != std::string::npos);
    CHECK(effect->meaning.find("removed") != std::string::npos);
    REQUIRE(data.score("ablation_repeat_loss"));
    CHECK(data.score("ablation_repeat_loss")->count() == 4);  // the induction heads L0H4, L1H3, L2H2, L3H1
    // The fixed order: the head types' scores, then the causal ones.
    CHECK(data.scores[data.scores.size() - 4].name == "importance");
    CHECK(data.scores.back().name == "ablation_repeat_loss");
    const std::string index = read_file(directory.path / "index.html");
    CHECK(index.find("<th data-score=\"importance\" title=\"mean |∂L/∂ξ|") != std::string::npos);
    CHECK(index.find("<th data-score=\"ablation_loss\" title=\"mean loss increase") != std::string::npos);
  }

  SECTION("pruning.png and the importance heatmap are drawn") {
    const Png pruning = decode_png(directory.path / "plots" / "pruning.png");
    CHECK(pruning.width == 760);
    CHECK(pruning.height == 470);
    require_drawn(pruning);
    // Both orders' curves are there, in their colours (palette.cpp).
    CHECK(pixels_of(directory.path / "plots" / "pruning.png", "#0072b2") > 300);
    CHECK(pixels_of(directory.path / "plots" / "pruning.png", "#d55e00") > 300);
    for (const char* score : {"importance", "ablation_loss"}) {
      INFO(score);
      const Png png = decode_png(directory.path / "plots" / score_plot_name(score));
      CHECK(png.width == 560);
      CHECK(png.height == 84 + kLayers * 56 + 110);  // 56-pixel cells for 6 heads
      require_drawn(png);
    }
    // The most important head is the top of viridis; the ablation map is diverging, through white.
    CHECK(pixels_of(directory.path / "plots" / "score_importance.png", "#fde725") > 56 * 40);
    CHECK(pixels_of(directory.path / "plots" / "score_ablation_loss.png", "#fde725") == 0);
    CHECK(pixels_of(directory.path / "plots" / "score_ablation_loss.png", "#b2182b") > 56 * 40);
  }

  SECTION("index.html has the pruning figure, one point per pruning point and order") {
    const std::string index = read_file(directory.path / "index.html");
    const std::string figure = between(index, "<svg class=\"pruning\"", "</svg>");
    REQUIRE(!figure.empty());
    CHECK(count(figure, "class=\"point importance\"") == points.size());
    CHECK(count(figure, "class=\"point random\"") == points.size());
    CHECK(count(figure, "class=\"each-random\"") == 3);
    CHECK(figure.find("importance order: 100 % removed (24 heads)") != std::string::npos);
    CHECK(figure.find("random order: 50 % removed (12 heads)") != std::string::npos);
    CHECK(index.find("<a href=\"#causal\">Causal evidence</a>") != std::string::npos);
    CHECK(index.find("<a href=\"plots/pruning.png\">") != std::string::npos);
    CHECK(index.find("<td>next-token</td>") != std::string::npos);
  }

  SECTION("the head map switches between the label and the causal scores") {
    const std::string index = page_markup(directory.path / "index.html");
    CHECK(count(index, "name=\"map-colour\"") == 3);
    CHECK(index.find("value=\"label\" checked") != std::string::npos);
    CHECK(count(index, "data-fill-label=") == kLayers * kHeads);
    CHECK(count(index, "data-fill-importance=") == kLayers * kHeads);
    CHECK(count(index, "data-fill-ablation_loss=") == kLayers * kHeads);
    CHECK(count(index, "data-map-legend=\"importance\" hidden") == 1);
    CHECK(count(index, "data-map-legend=\"ablation_loss\" hidden") == 1);
    // The most important head has the top colour of the scale; the largest loss increase, dark red.
    int top_layer = 0, top_head = 0;
    for (int layer = 0; layer < kLayers; ++layer) {
      for (int head = 0; head < kHeads; ++head) {
        if (fixture_importance(layer, head) > fixture_importance(top_layer, top_head)) top_layer = layer, top_head = head;
      }
    }
    const std::string cell = between(index, "data-head-id=\"" + head_id(top_layer, top_head) + "\"", ">");
    CHECK(cell.find("data-fill-importance=\"#fde725\"") != std::string::npos);
    CHECK(between(index, "data-head-id=\"L1H5\"", ">").find("data-fill-ablation_loss=\"#b2182b\"") != std::string::npos);
  }

  SECTION("a head's page has its causal evidence with its ranks") {
    for (int layer = 0; layer < kLayers; ++layer) {
      for (int head = 0; head < kHeads; ++head) {
        INFO(head_id(layer, head));
        const std::string page = read_file(directory.path / "heads" / (head_id(layer, head) + ".html"));
        CHECK(page.find("<section id=\"causal\"><h2>Causal evidence</h2>") != std::string::npos);
        CHECK(page.find("<a href=\"#causal\">Causal evidence</a>") != std::string::npos);
        const std::string importance = between(page, "<tr id=\"causal-importance\">", "</tr>");
        CHECK(importance.find(">" + std::to_string(expected_rank(fixture_importance, kLayers, kHeads, layer, head)) +
                              " of 24 <span class=\"note\">(1 = most important)") != std::string::npos);
        const std::string effect = between(page, "<tr id=\"causal-ablation\">", "</tr>");
        CHECK(effect.find(">" + std::to_string(expected_rank(fixture_ablation_loss, kLayers, kHeads, layer, head)) +
                          " of 24 <span class=\"note\">(1 = largest increase)") != std::string::npos);
        CHECK(effect.find(" nats</td>") != std::string::npos);
        const bool induction = (layer + head) % 6 == 4;
        CHECK((page.find("<tr id=\"causal-repeat\">") != std::string::npos) == induction);
        CHECK(page.find("Michel, Levy and Neubig 2019") != std::string::npos);
      }
    }
    // Hand-checked: L1H5 is the most important head of all (0.47 + 0.004·5 + 0.002), and removing
    // it raises the loss most; L0H0 is the least important.
    CHECK(between(read_file(directory.path / "heads" / "L1H5.html"), "<tr id=\"causal-importance\">", "</tr>").find(">1 of 24 ") != std::string::npos);
    CHECK(between(read_file(directory.path / "heads" / "L0H0.html"), "<tr id=\"causal-importance\">", "</tr>").find(">24 of 24 ") != std::string::npos);
  }

  SECTION("what a head depends on, and what depends on it, link to their pages") {
    // From heads.json: who lists whom.
    std::map<std::string, std::vector<std::string>> depended_on_by;
    for (const auto& entry : fixture.heads["heads"]) {
      const std::string id = head_id(entry["layer"].get<int>(), entry["head"].get<int>());
      const std::string page = read_file(directory.path / "heads" / (id + ".html"));
      if (!entry.contains("circuit")) {
        CHECK(page.find("id=\"depends-on\"") == std::string::npos);
        continue;
      }
      const std::string block = between(page, "<div id=\"depends-on\">", "</div>");
      REQUIRE(!block.empty());
      std::size_t previous = 0;
      for (const auto& link : entry["circuit"]["depends_on"]) {
        const std::string target = head_id(link["layer"].get<int>(), link["head"].get<int>());
        INFO(id << " depends on " << target);
        const auto at = block.find("<a href=\"" + target + ".html\">" + target + "</a>");
        REQUIRE(at != std::string::npos);
        CHECK(at > previous);  // largest drop first
        previous = at;
        depended_on_by[target].push_back(id);
      }
      CHECK(count(block, "<tr><td>") == entry["circuit"]["depends_on"].size());
    }
    // Hand-checked: the induction head L2H2 reads the previous-token heads L1H5 and L0H0 first.
    const std::string l2h2 = between(read_file(directory.path / "heads" / "L2H2.html"), "<div id=\"depends-on\">", "</div>");
    CHECK(l2h2.find("L1H5.html") < l2h2.find("L0H0.html"));
    CHECK(l2h2.find("<td class=\"num\">0.600</td>") != std::string::npos);
    CHECK(depended_on_by["L0H0"] == std::vector<std::string>{"L1H3", "L1H4", "L2H2", "L2H3", "L3H1", "L3H2"});

    for (int layer = 0; layer < kLayers; ++layer) {
      for (int head = 0; head < kHeads; ++head) {
        const std::string id = head_id(layer, head);
        INFO(id);
        const std::string page = read_file(directory.path / "heads" / (id + ".html"));
        const std::string block = between(page, "<div id=\"depended-on-by\">", "</div>");
        const auto& expected = depended_on_by[id];
        CHECK(block.empty() == expected.empty());
        CHECK(count(block, "<tr><td>") == expected.size());
        for (const auto& dependent : expected) {
          CHECK(block.find("<a href=\"" + dependent + ".html\">" + dependent + "</a>") != std::string::npos);
        }
      }
    }
  }
}

TEST_CASE("a report without ablation shows no causal evidence", "[reports][e2e]") {
  const Fixture fixture(4, 6, FixtureText::plain, 4, 14);
  REQUIRE(!fixture.heads.contains("ablation"));
  TempDir directory("no-ablation");
  write_reports(directory.path, fixture.heads, fixture.examples, fixture.probes, ReportOptions{});
  const ReportData data = read_report_data(fixture.heads);
  CHECK(!data.ablation);
  CHECK(data.score("importance") == nullptr);
  CHECK(!fs::exists(directory.path / "plots" / "pruning.png"));
  CHECK(!fs::exists(directory.path / "plots" / "score_importance.png"));
  CHECK(!fs::exists(directory.path / "plots" / "score_ablation_loss.png"));
  const std::string index = page_markup(directory.path / "index.html");
  for (const char* absent : {"name=\"map-colour\"", "data-fill-", "data-map-legend", "id=\"causal\"", "class=\"pruning\"",
                             "pruning.png", "Causal evidence", "importance"}) {
    INFO(absent);
    CHECK(index.find(absent) == std::string::npos);
  }
  for (const auto& info : data.head_list) {
    INFO(info.id());
    const std::string page = page_markup(directory.path / "heads" / (info.id() + ".html"));
    CHECK(page.find("id=\"causal\"") == std::string::npos);
    CHECK(page.find("Causal evidence") == std::string::npos);
    CHECK(page.find("depends-on") == std::string::npos);
  }
}

TEST_CASE("markup in a masked-LM ablation run stays text", "[reports][e2e]") {
  const Fixture fixture(2, 4, FixtureText::hostile, 2, 16, 12345, FixtureAblation::full);
  TempDir directory("hostile-ablation");
  write_reports(directory.path, fixture.heads, fixture.examples, fixture.probes, ReportOptions{});
  const std::string index = read_file(directory.path / "index.html");
  CHECK(count(index, "<script") == 3);
  CHECK(index.find("<b>[MASK]") == std::string::npos);
  CHECK(index.find("<td>&lt;/script&gt;&lt;b&gt;[MASK]&lt;/b&gt;</td>") != std::string::npos);
  CHECK(index.find("<td>masked-lm</td>") != std::string::npos);
  CHECK(index.find("masked-lm loss 3.21 nats with every head") != std::string::npos);
}

TEST_CASE("partial causal evidence in heads.json", "[reports]") {
  const auto document = nlohmann::ordered_json::parse(R"({
    "model": {"layers": 2, "heads": 2},
    "ablation": {"sequences": 4, "objective": "next-token", "loss": 2.5},
    "heads": [
      {"layer": 0, "head": 0, "scores": {"importance": 2.0, "ablation_loss": -0.5}},
      {"layer": 0, "head": 1, "scores": {"importance": 2.0, "ablation_loss": 0.25}},
      {"layer": 1, "head": 0, "labels": ["induction"], "primary": "induction",
       "scores": {"importance": 0.5, "ablation_loss": 0.0},
       "circuit": {"score": "induction", "baseline": 0.9,
                   "depends_on": [{"layer": 0, "head": 1, "drop": 0.1}, {"layer": 7, "head": 0, "drop": 0.9},
                                  {"layer": 0, "head": 0, "drop": 0.3}]}},
      {"layer": 1, "head": 1, "labels": ["induction"], "primary": "induction", "scores": {"importance": 0.1},
       "circuit": {"score": "induction", "baseline": 0.5, "depends_on": []}}
    ]})");
  const ReportData data = read_report_data(document);
  REQUIRE(data.ablation);
  CHECK(data.ablation->pruning.empty());
  CHECK(!data.ablation->loss_range());
  // Ties share a rank; the next rank counts them.
  const ScoreColumn& importance = *data.score("importance");
  CHECK(importance.rank(0) == 1u);
  CHECK(importance.rank(1) == 1u);
  CHECK(importance.rank(2) == 3u);
  CHECK(importance.high == 2.0);  // beyond 1: the scale is 0..max, not a share's 0..1
  const ScoreColumn& effect = *data.score("ablation_loss");
  CHECK(effect.low == -0.5);
  CHECK(effect.high == 0.5);
  CHECK(to_hex(score_colour(effect, 0.0)) == "#f7f7f7");
  CHECK(!effect.values[3]);
  // A link outside the model is left out; the others are sorted by drop.
  REQUIRE(data.at(1, 0).circuit);
  REQUIRE(data.at(1, 0).circuit->depends_on.size() == 2);
  CHECK(data.at(1, 0).circuit->depends_on[0].id() == "L0H0");
  CHECK(data.at(0, 1).depended_on_by.size() == 1);
  CHECK(data.at(0, 1).depended_on_by[0].id() == "L1H0");

  TempDir directory("partial-ablation");
  write_reports(directory.path, document, {}, {}, ReportOptions{});
  CHECK(!fs::exists(directory.path / "plots" / "pruning.png"));  // no points
  CHECK(fs::exists(directory.path / "plots" / "score_importance.png"));
  const std::string index = read_file(directory.path / "index.html");
  CHECK(index.find("heads.json has no pruning points") != std::string::npos);
  CHECK(index.find("<svg class=\"pruning\"") == std::string::npos);
  CHECK(read_file(directory.path / "heads" / "L1H1.html").find("No earlier-layer head lowers its induction score") != std::string::npos);
  CHECK(read_file(directory.path / "heads" / "L1H0.html").find("<tr id=\"causal-repeat\">") == std::string::npos);
}

TEST_CASE("loss axes have round ticks", "[reports]") {
  const ValueAxis wide = round_value_axis(3.2104, 6.66, 5);
  CHECK(wide.low == 3);
  CHECK(wide.high == 7);
  CHECK(wide.step == 1);
  CHECK(wide.digits == 0);
  const ValueAxis narrow = round_value_axis(0.02, 0.13, 5);
  CHECK(narrow.low == 0);
  CHECK(narrow.high == Approx(0.15));
  CHECK(narrow.step == Approx(0.025));
  CHECK(narrow.digits == 3);
  const ValueAxis flat = round_value_axis(2, 2, 5);
  CHECK(flat.low < 2);
  CHECK(flat.high > 2);
}
