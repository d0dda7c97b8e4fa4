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

#include "analyzer/errors.h"
#include "reports/attention_data.h"
#include "reports/html_long_context.h"
#include "reports/model_layers_json.h"
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

#include "tests/report_test_support.h"


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
  SECTION("messages reach the terminal with control characters escaped as tokens are") {
    // ESC [ 31 m (colour), BEL, a line feed, C1 CSI (U+009B), OSC 0 (a window title), invalid UTF-8.
    CHECK(terminal_text("bos \x1B[31m\x07\n\xC2\x9B" "2J\x1B]0;x\x07 \xFF é") ==
          "bos \\x1B[31m\\x07↵\\u009B2J\\x1B]0;x\\x07 \xEF\xBF\xBD é");
    CHECK(terminal_text("model.pt: expected a TorchScript archive") == "model.pt: expected a TorchScript archive");
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
    // heads.png: 56-pixel cells for 4 heads, legend of 13 labels (plot_heads.cpp).
    const Png heads = decode_png(directory.path / "plots" / "heads.png");
    CHECK(heads.width == 64 + 4 * 56 + 30 + 210);
    CHECK(heads.height == 70 + 24 * 13 + 40);
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

// A plot on a full disk (/dev/full answers every write with ENOSPC) is an error naming the file and
// the reason, from libpng's write callback through CheckedFile, and nothing on the terminal.
TEST_CASE("a plot on a full disk is an error naming the file", "[reports]") {
  for (const int side : {4, 2000}) {  // the last buffer fails at the flush; a large PNG already in libpng's writes
    CAPTURE(side);
    const PngCanvas canvas(side, side);
    CHECK_THROWS_WITH(canvas.save("/dev/full"), "/dev/full: cannot write (No space left on device)");
  }
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

// A bidirectional model (BERT) gets no induction, duplicate-token, retrieval or streaming label: its
// maps state no threshold for them. A CoNLL-U corpus brings its own trees: no word of link-grammar.
// Heads that share no keys and values are not said to be in a key/value group.
TEST_CASE("reports of bidirectional models state only the labels they can get", "[reports][e2e]") {
  Fixture fixture(1, 2, FixtureText::plain, 2, 10);
  const auto threshold_of = [](const ReportData& data, const char* score) {
    const ScoreColumn* column = data.score(score);
    REQUIRE(column != nullptr);
    return column->threshold;
  };
  const ReportData causal = read_report_data(fixture.heads);
  CHECK(causal.causal);
  CHECK(threshold_of(causal, "induction") == 0.4);
  CHECK(!causal.grouped_query);

  fixture.heads["model"]["causal"] = false;
  fixture.heads["corpus"]["parser"] = "conllu";
  const ReportData bidirectional = read_report_data(fixture.heads);
  CHECK(!bidirectional.causal);
  CHECK(!threshold_of(bidirectional, "induction"));
  CHECK(!threshold_of(bidirectional, "duplicate_token"));
  CHECK(threshold_of(bidirectional, "previous_token") == causal.score("previous_token")->threshold);
  TempDir directory("bidirectional");
  write_reports(directory.path, fixture.heads, fixture.examples, fixture.probes, ReportOptions{true, false});
  const std::string index = read_file(directory.path / "index.html");
  CHECK(index.find("threshold 0.4") == std::string::npos);  // induction's and duplicate_token's
  CHECK(index.find("link-grammar") == std::string::npos);
  CHECK(index.find("the CoNLL-U corpus's own trees") != std::string::npos);
  CHECK(index.find("kv group") == std::string::npos);
  CHECK(read_file(directory.path / "heads" / "L0H1.html").find("key/value group") == std::string::npos);

  // Two heads sharing keys and values (n_kv_heads 1): the head pages and the table say so.
  fixture.heads["heads"][1]["kv_group"] = 0;
  const ReportData grouped = read_report_data(fixture.heads);
  CHECK(grouped.grouped_query);
  TempDir grouped_directory("grouped");
  write_reports(grouped_directory.path, fixture.heads, fixture.examples, fixture.probes, ReportOptions{true, false});
  CHECK(read_file(grouped_directory.path / "heads" / "L0H1.html").find("key/value group 0") != std::string::npos);
  CHECK(read_file(grouped_directory.path / "index.html").find("kv group") != std::string::npos);
}

TEST_CASE("heads.json's layer numbering: written by the model's index, read back to the maps", "[reports][layers]") {
  using Json = nlohmann::ordered_json;
  LayerNumbering numbering;
  numbering.layers = {{0, "model.layers.0", "linear attention"}, {1, "model.layers.1", "attention"},
                      {2, "model.layers.2", "state space"}, {3, "model.layers.3", "attention"}};
  numbering.attention_layers = {1, 3};
  const auto by_map = [] {
    Json document = {{"model", {{"layers", 2}, {"heads", 1}}}, {"heads", Json::array()}};
    document["heads"].push_back({{"layer", 0}, {"head", 0}});
    document["heads"].push_back({{"layer", 1}, {"head", 0}});
    document["heads"][1]["circuit"] = {{"depends_on", Json::array({{{"layer", 0}, {"head", 0}, {"drop", 0.5}}})}};
    return document;
  };
  SECTION("known: every layer listed, heads and circuit links by the model's index") {
    Json document = by_map();
    number_layers(document, numbering, 2);
    CHECK(document["model"]["layers"].size() == 4);
    CHECK(document["model"]["layers"][2] == Json({{"index", 2}, {"path", "model.layers.2"}, {"kind", "state space"}}));
    CHECK(document["heads"][0]["layer"] == 1);
    CHECK(document["heads"][1]["layer"] == 3);
    CHECK(document["heads"][1]["circuit"]["depends_on"][0]["layer"] == 1);
    CHECK_FALSE(document["model"].contains("layers_note"));
    const DocumentLayers read = document_layers(document["model"], "heads.json");
    CHECK(read.maps == 2);
    CHECK(read.numbering.attention_layers == std::vector<int>{1, 3});
    CHECK(read.numbering.map_of(3) == 1);
    CHECK(read.numbering.map_of(2) == -1);
    const ReportData data = read_report_data(document);
    CHECK(data.layers == 2);
    CHECK(data.at(1, 0).id() == "L3H0");
    CHECK(data.at(1, 0).circuit->depends_on[0].layer == 0);  // by map inside the report
    CHECK(data.layers_without_maps() == std::vector<std::string>{"0 linear attention", "2 state space"});
  }
  SECTION("unknown, or not matching the maps: the maps' numbering, and a note saying why") {
    Json document = by_map();
    number_layers(document, LayerNumbering{{}, {}, "the graph keeps no module names"}, 2);
    CHECK(document["model"]["layers"] == 2);
    CHECK(document["heads"][1]["layer"] == 1);
    CHECK_THAT(document["model"]["layers_note"].get<std::string>(),
               Catch::Contains("order of the attention maps") && Catch::Contains("the graph keeps no module names"));
    Json three = by_map();
    number_layers(three, numbering, 3);
    CHECK(three["model"]["layers"] == 2);
    CHECK_THAT(three["model"]["layers_note"].get<std::string>(), Catch::Contains("2 attention layers") &&
                                                                      Catch::Contains("3 attention maps"));
  }
  SECTION("a damaged list is refused naming what is wrong") {
    const auto error_of = [](const Json& layers) {
      try {
        document_layers(Json{{"layers", layers}}, "run/heads.json");
      } catch (const InputError& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    CHECK_THAT(error_of(Json::array({{{"index", 1}, {"path", "a"}, {"kind", "attention"}}})),
               Catch::Contains("run/heads.json") && Catch::Contains("index order from 0"));
    CHECK_THAT(error_of(Json::array({{{"index", 0}, {"path", "a"}, {"kind", "mamba"}}})),
               Catch::Contains("known kind"));
    CHECK_THAT(error_of(Json::array({{{"index", 0}, {"path", "a"}, {"kind", "none"}}})),
               Catch::Contains("no layer of kind \"attention\""));
    CHECK_THAT(error_of("2"), Catch::Contains("must be"));
  }
}

TEST_CASE("the long-context section draws the needle grid: the model's per length and depth, and the retrieval heads'",
          "[reports]") {
  const nlohmann::ordered_json document = nlohmann::ordered_json::parse(R"({
    "retrieval": {"probes": 14, "haystacks": 8, "needle_length": 12, "haystack_tokens": 103,
                  "depths": [0.1, 0.5], "copy_accuracy": [0.5, 0.121212], "copy_events": 15, "candidates": 44,
                  "minimum_events": 20, "lengths": [64, 128],
                  "grid": {"haystack_tokens": [39, 103], "probes": [[1, 1], [0, 2]],
                           "candidates": [[11, 11], [0, 22]], "copy_events": [[8, 0], [0, 7]],
                           "copy_accuracy": [[0.727273, 0.0], [null, 0.318182]]},
                  "head_hits": [[[[8, 0], [0, 1]], [[0, 0], [0, 0]]]]},
    "heads": [{"layer": 3, "head": 0, "scores": {"retrieval": 0.6}},
              {"layer": 3, "head": 1, "scores": {"retrieval": 0.0}}]})");
  const std::string html = long_context_section(document);
  CHECK(html.find("14 probes of 64 and 128 tokens") != std::string::npos);
  // The model's grid: a row per length, a cell per depth, coloured by events / candidates.
  CHECK(count(html, "<table class=\"needlegrid \">") == 1);
  CHECK(html.find("title=\"8 of 11 final-needle tokens predicted\">73 %</td>") != std::string::npos);
  CHECK(html.find("title=\"0 of 11 final-needle tokens predicted\">0 %</td>") != std::string::npos);
  CHECK(html.find("title=\"7 of 22 final-needle tokens predicted\">32 %</td>") != std::string::npos);
  CHECK(count(html, "<td class=\"empty\"") == 3);  // the model's cell without probes and head 0's two without events
  // Per head: only heads with a retrieval score above 0, named by the model's layer index, hits / copy events.
  CHECK(count(html, "<table class=\"needlegrid small\">") == 1);
  CHECK(html.find("L3 H0: retrieval 0.6") != std::string::npos);
  CHECK(html.find("L3 H1") == std::string::npos);
  CHECK(html.find("title=\"8 of 8 copy events where the head&#39;s argmax key is the copied token\">100 %") != std::string::npos);
  CHECK(html.find("title=\"1 of 7 copy events where the head&#39;s argmax key is the copied token\">14 %") != std::string::npos);
  // A head's page: its own grid, by the attention map's row; none for a head past the grid.
  const std::string page = head_needle_section(document, 0, 0);
  CHECK(count(page, "<table class=\"needlegrid \">") == 1);
  CHECK(page.find("title=\"1 of 7 copy events where the head&#39;s argmax key is the copied token\">14 %") != std::string::npos);
  CHECK(count(head_needle_section(document, 0, 1), "title=\"0 of 8 copy events") == 1);
  CHECK(head_needle_section(document, 0, 2).empty());
  CHECK(head_needle_section(document, 1, 0).empty());
  // A causal run without --ablation: its KV-cache plan has no needle check.
  nlohmann::ordered_json planned = document;
  planned["kv_plan"] = {{"sink_size", 4}, {"recent_size", 64}, {"full_attention_heads", {{1, 0}}}};
  CHECK_NOTHROW(long_context_section(planned));
}

TEST_CASE("the long-context section gives the KV-cache plan's needle check per probe length", "[reports]") {
  nlohmann::ordered_json document = nlohmann::ordered_json::parse(R"({
    "kv_plan": {"sink_size": 4, "recent_size": 64, "full_kv_heads": 1, "kv_heads": 2,
                "needles": {"lengths": [4096, 8192], "copy_events": [440, 0], "copy_accuracy": [0.6, null],
                            "loss_delta": [2.121882, null]}}})");
  std::string html = long_context_section(document);
  CHECK(html.find("<th>needle probes (tokens)</th><td>4096</td><td>8192</td>") != std::string::npos);
  CHECK(html.find("<th>copy events</th><td>440</td><td>0</td>") != std::string::npos);
  CHECK(html.find("<th>still copied</th><td>60.0 %</td><td>—</td>") != std::string::npos);
  CHECK(html.find("<th>loss change (nats)</th><td>+2.1219</td><td>—</td>") != std::string::npos);
  document["kv_plan"].erase("needles");
  document["kv_plan"]["needles_note"] = "the model copied the needle 0 times";
  html = long_context_section(document);
  CHECK(html.find("needle probes (tokens)") == std::string::npos);
  CHECK(html.find("<p class=\"note\">the model copied the needle 0 times</p>") != std::string::npos);
}
