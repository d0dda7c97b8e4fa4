// The report writer on hand-made heads.json and examples (tests/report_fixture.h): escaping,
// reading heads.json with absent fields, which files are written, PNGs that decode, have their
// sizes and are not blank, any script in token labels, and a size that does not grow with the corpus.
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "reports/attention_data.h"
#include "reports/palette.h"
#include "reports/plots.h"
#include "reports/png_canvas.h"
#include "reports/report_data.h"
#include "reports/report_writer.h"
#include "reports/text.h"
#include "tests/report_fixture.h"

using namespace headscan;
using namespace headscan::testing;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) : path(fs::temp_directory_path() / ("headscan-test-reports-" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::uintmax_t directory_size(const fs::path& path) {
  std::uintmax_t total = 0;
  for (const auto& entry : fs::recursive_directory_iterator(path)) {
    if (entry.is_regular_file()) total += entry.file_size();
  }
  return total;
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

struct Png {
  int width = 0;
  int height = 0;
  double luminance_variance = 0;
  std::size_t colours = 0;  // distinct colours, up to 1000
};

Png decode_png(const fs::path& path) {
  cairo_surface_t* surface = cairo_image_surface_create_from_png(path.c_str());
  REQUIRE(cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS);
  Png png;
  png.width = cairo_image_surface_get_width(surface);
  png.height = cairo_image_surface_get_height(surface);
  const int stride = cairo_image_surface_get_stride(surface);
  const unsigned char* pixels = cairo_image_surface_get_data(surface);
  double sum = 0, squares = 0;
  std::vector<std::uint32_t> seen;
  for (int y = 0; y < png.height; ++y) {
    const auto* row = reinterpret_cast<const std::uint32_t*>(pixels + static_cast<std::ptrdiff_t>(y) * stride);
    for (int x = 0; x < png.width; ++x) {
      const std::uint32_t pixel = row[x] & 0xFFFFFF;
      const double luminance = 0.2126 * ((pixel >> 16) & 255) + 0.7152 * ((pixel >> 8) & 255) + 0.0722 * (pixel & 255);
      sum += luminance;
      squares += luminance * luminance;
      if (seen.size() < 1000 && std::find(seen.begin(), seen.end(), pixel) == seen.end()) seen.push_back(pixel);
    }
  }
  const double n = static_cast<double>(png.width) * png.height;
  png.luminance_variance = squares / n - (sum / n) * (sum / n);
  png.colours = seen.size();
  cairo_surface_destroy(surface);
  return png;
}

// Pixels of exactly `hex` ("#rrggbb") in a PNG.
std::size_t pixels_of(const fs::path& path, const std::string& hex) {
  cairo_surface_t* surface = cairo_image_surface_create_from_png(path.c_str());
  REQUIRE(cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS);
  const std::uint32_t wanted = static_cast<std::uint32_t>(std::stoul(hex.substr(1), nullptr, 16));
  const int width = cairo_image_surface_get_width(surface), height = cairo_image_surface_get_height(surface);
  const int stride = cairo_image_surface_get_stride(surface);
  const unsigned char* pixels = cairo_image_surface_get_data(surface);
  std::size_t found = 0;
  for (int y = 0; y < height; ++y) {
    const auto* row = reinterpret_cast<const std::uint32_t*>(pixels + static_cast<std::ptrdiff_t>(y) * stride);
    for (int x = 0; x < width; ++x) found += (row[x] & 0xFFFFFF) == wanted;
  }
  cairo_surface_destroy(surface);
  return found;
}

// The text from `start` to the next `end` after it, or "" when `start` is not in `text`.
std::string between(const std::string& text, const std::string& start, const std::string& end) {
  const auto from = text.find(start);
  if (from == std::string::npos) return "";
  const auto to = text.find(end, from);
  return text.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

void require_drawn(const Png& png) {
  CHECK(png.luminance_variance > 100);  // not one flat colour
  CHECK(png.colours > 8);
}

struct Fixture {
  std::vector<ExampleSequence> examples;
  std::vector<ExampleSequence> probes;
  nlohmann::ordered_json heads;
  Fixture(int layers, int heads_per_layer, FixtureText text, std::size_t count, std::size_t length, long corpus_tokens = 12345,
          FixtureAblation ablation = FixtureAblation::none)
      : examples(fixture_examples(layers, heads_per_layer, fixture_token_lists(text, count, length))),
        probes(fixture_probes(layers, heads_per_layer, 12, 2)),
        heads(fixture_heads_json(layers, heads_per_layer, examples, probes, text, corpus_tokens, ablation)) {}
};

}  // namespace

TEST_CASE("text from the corpus is escaped for HTML and for scripts", "[reports]") {
  SECTION("HTML") {
    CHECK(escape_html("<script>alert(\"x\") & 'y'</script>") ==
          "&lt;script&gt;alert(&quot;x&quot;) &amp; &#39;y&#39;&lt;/script&gt;");
  }
  SECTION("JSON inside <script> cannot close it") {
    const std::string json = json_for_script(nlohmann::ordered_json{{"name", "</script><!--x-->&"}});
    CHECK(json == "{\"name\":\"\\u003c/script\\u003e\\u003c!--x--\\u003e\\u0026\"}");
    CHECK(nlohmann::json::parse(json)["name"] == "</script><!--x-->&");
  }
  SECTION("invalid UTF-8 becomes U+FFFD") {
    CHECK(valid_utf8("a\xFF" "b\xC3") == "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
    CHECK(valid_utf8("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
    CHECK(valid_utf8("你好😀") == "你好😀");
    CHECK(json_for_script(nlohmann::ordered_json("x\xFF")) == "\"x\xEF\xBF\xBD\"");
  }
  SECTION("tokens are shown visibly and shortened") {
    CHECK(display_token("a\tb\n") == "a⇥b↵");
    CHECK(display_token("\x01") == "\\x01");
    CHECK(display_token("  ") == "␣");
    CHECK(display_token("注意力机制", 3) == "注意力…");
  }
}

TEST_CASE("heads.json fields may be absent, null or objects", "[reports]") {
  const auto document = nlohmann::ordered_json::parse(R"({
    "model": {"layers": 1, "heads": 2},
    "thresholds": {"previous_token": 0.5},
    "heads": [
      {"layer": 0, "head": 0, "primary": "previous-token", "labels": ["previous-token", "positional"],
       "scores": {"previous_token": 0.9, "positional": {"offset": -1, "weight": 0.85, "argmax_rate": 0.9},
                  "induction": null, "mean_distance": 3.5,
                  "syntactic": {"nsubj": {"direction": "h2d", "accuracy": 0.61, "baseline": 0.45, "baseline_offset": -1,
                                          "support": 812, "passed": true},
                                "det": {"direction": "d2h", "accuracy": 0.9, "baseline": 0.88, "support": 40, "passed": false}}}},
      {"layer": 0, "head": 1}
    ]})");
  const ReportData data = read_report_data(document);
  REQUIRE(data.layers == 1);
  REQUIRE(data.heads == 2);
  CHECK(data.at(0, 1).primary == "none");
  CHECK(data.at(0, 1).scores == nullptr);
  CHECK(data.score("induction") == nullptr);  // only nulls: no column
  REQUIRE(data.score("previous_token"));
  CHECK(*data.score("previous_token")->threshold == 0.5);
  CHECK(!data.score("previous_token")->values[1]);
  CHECK(*data.score("positional")->values[0] == Approx(0.85));
  // The passed relation counts, not the one with the larger margin that failed.
  CHECK(*data.score("syntactic")->values[0] == Approx(0.16));
  CHECK(data.score("mean_distance")->high == Approx(3.5));
  CHECK(score_text(&document["heads"][0]["scores"]["positional"]) == "−1: 0.85 (argmax 0.90)");
  CHECK(score_text(&document["heads"][0]["scores"]["syntactic"]) == "nsubj h2d 0.61 vs 0.45 ✓");
  CHECK(score_text(nullptr) == "—");
  CHECK_THROWS_WITH(read_report_data(nlohmann::ordered_json::object()), Catch::Contains("no \"heads\" array"));

  TempDir directory("absent");
  write_reports(directory.path, document, {}, {}, ReportOptions{});
  CHECK(fs::exists(directory.path / "index.html"));
  CHECK(fs::exists(directory.path / "heads" / "L0H1.html"));
  CHECK(fs::exists(directory.path / "plots" / "score_syntactic.png"));
  CHECK(!fs::exists(directory.path / "plots" / "score_induction.png"));
  CHECK(!fs::exists(directory.path / "plots" / "induction.png"));  // no probes
  CHECK(read_file(directory.path / "heads" / "L0H0.html").find("nsubj") != std::string::npos);
}

TEST_CASE("the report has its pages, data and plots", "[reports][e2e]") {
  const Fixture fixture(2, 4, FixtureText::plain, 4, 14);
  TempDir directory("files");
  write_reports(directory.path, fixture.heads, fixture.examples, fixture.probes, ReportOptions{});
  const ReportData data = read_report_data(fixture.heads);

  SECTION("pages and data files") {
    CHECK(fs::exists(directory.path / "index.html"));
    CHECK(fs::exists(directory.path / "data" / "examples.js"));
    for (int layer = 0; layer < 2; ++layer) {
      for (int head = 0; head < 4; ++head) {
        const std::string id = "L" + std::to_string(layer) + "H" + std::to_string(head);
        CHECK(fs::exists(directory.path / "heads" / (id + ".html")));
        CHECK(fs::exists(directory.path / "data" / (id + ".js")));
        CHECK(fs::exists(directory.path / "plots" / "attention" / (id + "_0.png")));
        CHECK(fs::exists(directory.path / "plots" / "attention" / (id + "_1.png")));
        CHECK(!fs::exists(directory.path / "plots" / "attention" / (id + "_2.png")));
      }
    }
    const std::string index = read_file(directory.path / "index.html");
    CHECK(count(index, "class=\"cell\"") == 8);
    // No absolute URL in an attribute or stylesheet (the SVG namespace in the script is no request).
    const std::regex absolute(R"((src|href|action)\s*=\s*["']?\s*([a-z][a-z0-9+.-]*:|//)|url\(\s*["']?\s*(https?:|//)|@import)",
                              std::regex::icase);
    CHECK(!std::regex_search(index, absolute));
    CHECK(!std::regex_search(read_file(directory.path / "heads" / "L1H2.html"), absolute));
    CHECK(std::regex_search(std::string("<img src=\"https://cdn.example/x.png\">"), absolute));
  }

  SECTION("the label map and score heatmaps have their layout's size and are drawn") {
    // heads.png: 56-pixel cells for 4 heads, legend of 9 labels (plot_heads.cpp).
    const Png heads = decode_png(directory.path / "plots" / "heads.png");
    CHECK(heads.width == 64 + 4 * 56 + 30 + 210);
    CHECK(heads.height == 70 + 24 * 9 + 40);
    require_drawn(heads);
    for (const auto& score : data.scores) {
      INFO(score.name);
      const Png png = decode_png(directory.path / "plots" / score_plot_name(score.name));
      CHECK(png.width == 560);
      CHECK(png.height == 84 + 2 * 56 + 110);
      require_drawn(png);
    }
    const Png layers = decode_png(directory.path / "plots" / "layers.png");
    CHECK(layers.height == 370);
    require_drawn(layers);
    const Png induction = decode_png(directory.path / "plots" / "induction.png");
    CHECK(induction.width == 40 + 3 * 300);
    CHECK(induction.height == 110 + 2 * 320);
    require_drawn(induction);
  }

  SECTION("attention heatmaps are as large as their tokens") {
    // 14 tokens: 40-pixel cells (plot_attention.cpp), token labels beside and above.
    const Png png = decode_png(directory.path / "plots" / "attention" / "L0H0_0.png");
    CHECK(png.width >= 14 * 40 + 70);
    CHECK(png.width <= 14 * 40 + 70 + 110);
    CHECK(png.height - png.width == 60 + 80 - 40 - 30);
    require_drawn(png);
  }
}

TEST_CASE("token labels render in any script", "[reports][e2e]") {
  const PngCanvas canvas(1, 1);
  TextStyle style;
  CHECK(canvas.unknown_glyphs("你好 世界 注意力", style) == 0);
  CHECK(canvas.unknown_glyphs("привет мир", style) == 0);
  CHECK(canvas.unknown_glyphs("😀 🚀", style) == 0);
  CHECK(canvas.unknown_glyphs("ĠtheĠ ⇥ ↵ ␣ …", style) == 0);

  const Fixture fixture(1, 2, FixtureText::scripts, 1, 16);
  TempDir directory("scripts");
  plot_attention(fixture.examples[0], 0, 1, "你好 · L0H1", directory.path / "chinese.png");
  const Png png = decode_png(directory.path / "chinese.png");
  require_drawn(png);
  // The label column left of the matrix holds glyphs: more than one colour in it.
  CHECK(png.width > 16 * 40);
}

TEST_CASE("markup in the corpus and the model stays text", "[reports][e2e]") {
  const Fixture fixture(2, 4, FixtureText::hostile, 2, 16);
  TempDir directory("hostile");
  write_reports(directory.path, fixture.heads, fixture.examples, fixture.probes, ReportOptions{});
  for (const auto& page : {directory.path / "index.html", directory.path / "heads" / "L0H0.html"}) {
    INFO(page);
    const std::string html = read_file(page);
    CHECK(count(html, "<script") == 3);  // the page's own: early, config, main
    CHECK(count(html, "</script>") == 3);
    CHECK(html.find("alert(1)</script>") == std::string::npos);
    CHECK(html.find("<img src=x") == std::string::npos);
  }
  CHECK(read_file(directory.path / "index.html").find("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(read_file(directory.path / "heads" / "L0H0.html").find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  const std::string examples = read_file(directory.path / "data" / "examples.js");
  CHECK(examples.find('<') == std::string::npos);
  CHECK(examples.find("\\u003cscript\\u003ealert(1)\\u003c/script\\u003e") != std::string::npos);
}

TEST_CASE("reports without HTML or without plots (--no-html, --no-plots)", "[reports][e2e]") {
  const Fixture fixture(1, 2, FixtureText::plain, 2, 8);
  SECTION("plots only") {
    TempDir directory("plots-only");
    write_reports(directory.path, fixture.heads, fixture.examples, fixture.probes, ReportOptions{false, true});
    CHECK(!fs::exists(directory.path / "index.html"));
    CHECK(!fs::exists(directory.path / "heads"));
    CHECK(!fs::exists(directory.path / "data"));
    CHECK(fs::exists(directory.path / "plots" / "heads.png"));
  }
  SECTION("HTML only") {
    TempDir directory("html-only");
    write_reports(directory.path, fixture.heads, fixture.examples, fixture.probes, ReportOptions{true, false});
    CHECK(fs::exists(directory.path / "index.html"));
    CHECK(!fs::exists(directory.path / "plots"));
    const std::string index = read_file(directory.path / "index.html");
    CHECK(index.find("plots/") == std::string::npos);
    CHECK(read_file(directory.path / "heads" / "L0H1.html").find("plots/") == std::string::npos);
  }
  SECTION("neither") {
    TempDir directory("nothing");
    write_reports(directory.path, fixture.heads, fixture.examples, fixture.probes, ReportOptions{false, false});
    CHECK(fs::is_empty(directory.path));
  }
}

TEST_CASE("examples of the wrong shape are refused", "[reports][e2e]") {
  Fixture fixture(1, 2, FixtureText::plain, 1, 8);
  fixture.examples[0].attention.pop_back();
  TempDir directory("shape");
  CHECK_THROWS_WITH(write_reports(directory.path, fixture.heads, fixture.examples, {}, ReportOptions{}),
                    Catch::Contains("corpus example \"corpus line 1\": attention must be [layers=1][heads=2]"));
}

TEST_CASE("the report's size does not depend on the corpus", "[reports]") {
  SECTION("the same examples from a corpus 100 times larger") {
    const Fixture small(2, 4, FixtureText::plain, 8, 64, 10'000);
    const Fixture large(2, 4, FixtureText::plain, 8, 64, 1'000'000);
    TempDir a("size-small"), b("size-large");
    write_reports(a.path, small.heads, small.examples, small.probes, ReportOptions{});
    write_reports(b.path, large.heads, large.examples, large.probes, ReportOptions{});
    const double ratio = static_cast<double>(directory_size(b.path)) / static_cast<double>(directory_size(a.path));
    CHECK(ratio == Approx(1.0).epsilon(0.10));
  }
  SECTION("the viewer's data stays within its budget for many heads") {
    const auto examples = fixture_examples(12, 12, fixture_token_lists(FixtureText::plain, 8, 64));
    CHECK(select_viewer_examples(examples, {}, 12, 12).corpus_examples == 8);  // causal: 144 × 8 × 2080 bytes
    CHECK(select_viewer_examples(examples, {}, 32, 32).corpus_examples == 1);
    // quantized weights of the causal examples keep only the lower triangle
    CHECK(quantize_head(examples[0], 0, 0, true).size() == 64 * 65 / 2);
    CHECK(is_lower_triangular(examples[0]));
  }
}

TEST_CASE("weights are quantized to bytes and base64", "[reports][e2e]") {
  CHECK(base64({}) == "");
  CHECK(base64({'M'}) == "TQ==");
  CHECK(base64({'M', 'a'}) == "TWE=");
  CHECK(base64({'M', 'a', 'n'}) == "TWFu");
  const Fixture fixture(1, 1, FixtureText::plain, 1, 3);
  // Head 0 of layer 0 is a previous-token head: rows [1], [1 0], [0 1 0].
  CHECK(quantize_head(fixture.examples[0], 0, 0, true) == std::vector<unsigned char>{255, 255, 0, 0, 255, 0});
  CHECK(quantize_head(fixture.examples[0], 0, 0, false) == std::vector<unsigned char>{255, 0, 0, 255, 0, 0, 0, 255, 0});
  const auto queries = most_confident_queries(fixture.examples, 0, 0, 10);
  REQUIRE(queries.size() == 2);  // BOS is not a query
  CHECK(queries[0].query == 1);
  CHECK(queries[0].key == 0);
  CHECK(queries[1].key == 1);
}

// ---- causal evidence (--ablation) ---------------------------------------------------------------

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
