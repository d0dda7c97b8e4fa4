// `headscan tokenize`: the JSON lines it prints (ids, token strings, character spans, BOS and
// windows exactly as the analysis builds them), the BOS rule, and the command line.

#include <archive.h>

#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "analyzer/corpus/text_lines.h"
#include "analyzer/model/model_metadata.h"
#include "analyzer/run/commands/tokenize_command.h"
#include "analyzer/run/sequences/text_setup.h"
#include "tests/fixtures.h"
#include "tests/tokenizer_testing.h"

using headscan::testing::fixture;
using headscan::testing::run_headscan;
using headscan::testing::TempDir;
using namespace tokenizer_testing;

namespace {

// LLaMA-style BPE with byte fallback for 你 (E4 BD A0) and a template that starts with <s>.
json llama_like(bool with_template = true) {
  const json vocab = {{"<unk>", 0},  {"<s>", 1}, {"</s>", 2}, {"<0xE4>", 3}, {"<0xBD>", 4}, {"<0xA0>", 5},
                      {"▁", 6},      {"H", 7},   {"i", 8},    {"▁H", 9},     {"▁Hi", 10}};
  const json model = {{"type", "BPE"},           {"unk_token", "<unk>"}, {"byte_fallback", true},
                      {"fuse_unk", true},         {"vocab", vocab},        {"merges", {"▁ H", "▁H i"}}};
  const json normalizer = {
      {"type", "Sequence"},
      {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", "▁"}},
                                   {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}})}};
  json post_processor = nullptr;
  if (with_template) {
    post_processor = {{"type", "TemplateProcessing"},
                      {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                      {"pair", json::array()},
                      {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
  }
  return tokenizer_spec(model, normalizer, nullptr,
                        json::array({added_token(0, "<unk>"), added_token(1, "<s>"), added_token(2, "</s>")}),
                        post_processor);
}

// BERT's framing on a WordLevel vocabulary, [CLS] $A [SEP], by the post-processor given.
json bert_like(const json& post_processor) {
  const json vocab = {{"[PAD]", 0}, {"[UNK]", 1}, {"[CLS]", 2}, {"[SEP]", 3}, {"the", 4},
                      {"cat", 5},   {"sat", 6},   {"on", 7},    {"mat", 8}};
  json model = {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "[UNK]"}};
  return tokenizer_spec(model, nullptr, {{"type", "WhitespaceSplit"}},
                        json::array({added_token(0, "[PAD]"), added_token(1, "[UNK]"), added_token(2, "[CLS]"),
                                     added_token(3, "[SEP]")}),
                        post_processor);
}

json special_piece(const std::string& name) { return {{"SpecialToken", {{"id", name}, {"type_id", 0}}}}; }
json text_piece() { return {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}; }
json special_entry(const std::string& name, std::int64_t id) {
  return {{"id", name}, {"ids", {id}}, {"tokens", {name}}};
}

// TemplateProcessing "[CLS] $A [SEP]" as the tokenizers library writes it.
json cls_sep_template() {
  return {{"type", "TemplateProcessing"},
          {"single", json::array({special_piece("[CLS]"), text_piece(), special_piece("[SEP]")})},
          {"pair", json::array()},
          {"special_tokens", {{"[CLS]", special_entry("[CLS]", 2)}, {"[SEP]", special_entry("[SEP]", 3)}}}};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> tokenize(headscan::TokenizeOptions options, const std::string& standard_input = "") {
  std::istringstream in(standard_input);
  std::ostringstream out;
  headscan::run_tokenize(options, in, out);
  return lines_of(out.str());
}

}  // namespace

TEST_CASE("tokenize prints ids, tokens and character spans per line", "[tokenizer][tokenize]") {
  TempDir dir;
  headscan::TokenizeOptions options;
  options.tokenizer_path = dir.write("tokenizer.json", llama_like().dump());

  SECTION("BOS from the template; byte tokens span their whole character, in code points") {
    options.text = "Hi 你\n\nHi";
    CHECK(tokenize(options) ==
          std::vector<std::string>{
              R"({"line":1,"window":0,"ids":[1,10,6,3,4,5],"tokens":["<s>","▁Hi","▁","<0xE4>","<0xBD>","<0xA0>"],)"
              R"("spans":[[0,0],[0,2],[2,3],[3,4],[3,4],[3,4]]})",
              R"({"line":3,"window":0,"ids":[1,10],"tokens":["<s>","▁Hi"],"spans":[[0,0],[0,2]]})"});
  }
  SECTION("a line longer than max_length is cut into windows, each with BOS") {
    options.text = "Hi Hi Hi";
    options.max_length = 3;
    CHECK(tokenize(options) == std::vector<std::string>{
                                   R"({"line":1,"window":0,"ids":[1,10,10],"tokens":["<s>","▁Hi","▁Hi"],)"
                                   R"("spans":[[0,0],[0,2],[2,5]]})",
                                   R"({"line":1,"window":1,"ids":[1,10],"tokens":["<s>","▁Hi"],"spans":[[0,0],[5,8]]})"});
  }
  SECTION("standard input, with a CRLF line and invalid UTF-8 repaired as the corpus reader does") {
    headscan::TokenizeSummary summary;
    std::istringstream in("Hi\r\nHi\xff\n");
    std::ostringstream out;
    summary = headscan::run_tokenize(options, in, out);
    const std::vector<std::string> lines = lines_of(out.str());
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == R"({"line":1,"window":0,"ids":[1,10],"tokens":["<s>","▁Hi"],"spans":[[0,0],[0,2]]})");
    // U+FFFD (EF BF BD) has no piece: three byte pieces missing from this vocabulary, so <unk>.
    CHECK(lines[1] == R"({"line":2,"window":0,"ids":[1,10,0],"tokens":["<s>","▁Hi","<unk>"],)"
                      R"("spans":[[0,0],[0,2],[2,3]]})");
    CHECK(summary.bos == "<s> (id 1, from tokenizer template)");
    CHECK(summary.documents == 2);
    CHECK(summary.windows == 2);
    CHECK(summary.tokens == 5);
    REQUIRE(summary.warnings.size() == 1);
    CHECK_THAT(summary.warnings[0], Catch::Contains("invalid UTF-8"));
  }
  SECTION("without a template nor headscan.json there is no BOS") {
    options.tokenizer_path = dir.write("plain.json", llama_like(/*with_template=*/false).dump());
    options.text = "Hi";
    CHECK(tokenize(options) ==
          std::vector<std::string>{R"({"line":1,"window":0,"ids":[10],"tokens":["▁Hi"],"spans":[[0,2]]})"});
  }
  SECTION("a text file") {
    options.input_path = dir.write("corpus.txt", "Hi\n");
    CHECK(tokenize(options).size() == 1);
  }
  SECTION("no tokenizer at all") {
    options.tokenizer_path.clear();
    options.text = "Hi";
    CHECK_THROWS_WITH(tokenize(options), Catch::Contains("--tokenizer"));
  }
}

TEST_CASE("tokenize frames every window as the tokenizer's template does", "[tokenizer][tokenize]") {
  TempDir dir;
  headscan::TokenizeOptions options;
  options.text = "the cat on sat mat";
  // The tokenizers library gives [2, 4, 5, 7, 6, 8, 3] for each of these post-processors.
  const std::string framed = R"({"line":1,"window":0,"ids":[2,4,5,7,6,8,3],)"
                             R"("tokens":["[CLS]","the","cat","on","sat","mat","[SEP]"],)"
                             R"("spans":[[0,0],[0,3],[4,7],[8,10],[11,14],[15,18],[0,0]]})";

  SECTION("TemplateProcessing [CLS] $A [SEP]: BOS [CLS], suffix [SEP]") {
    options.tokenizer_path = dir.write("tokenizer.json", bert_like(cls_sep_template()).dump());
    std::istringstream in;
    std::ostringstream out;
    const headscan::TokenizeSummary summary = headscan::run_tokenize(options, in, out);
    CHECK(lines_of(out.str()) == std::vector<std::string>{framed});
    CHECK(summary.bos == "[CLS] (id 2, from tokenizer template)");
    CHECK(summary.suffix == "[SEP] (from tokenizer template)");
    CHECK(summary.tokens == 7);
  }
  SECTION("BertProcessing and RobertaProcessing: cls before, sep after") {
    for (const char* type : {"BertProcessing", "RobertaProcessing"}) {
      json post_processor = {{"type", type}, {"sep", {"[SEP]", 3}}, {"cls", {"[CLS]", 2}}};
      if (std::string(type) == "RobertaProcessing") post_processor.update({{"trim_offsets", true}, {"add_prefix_space", false}});
      options.tokenizer_path = dir.write(std::string(type) + ".json", bert_like(post_processor).dump());
      CHECK(tokenize(options) == std::vector<std::string>{framed});
    }
  }
  SECTION("each window of a long line gets BOS and the suffix: max_length - 2 words per window") {
    options.tokenizer_path = dir.write("tokenizer.json", bert_like(cls_sep_template()).dump());
    options.max_length = 4;
    std::vector<std::vector<int>> ids;
    for (const std::string& line : tokenize(options)) ids.push_back(json::parse(line)["ids"].get<std::vector<int>>());
    CHECK(ids == std::vector<std::vector<int>>{{2, 4, 5, 3}, {2, 7, 6, 3}, {2, 8, 3}});
  }
  SECTION("a suffix of two tokens after ByteLevel in a Sequence; no BOS (\"$A [SEP] [PAD]\")") {
    json template_processing = cls_sep_template();
    template_processing["single"] = json::array({text_piece(), special_piece("[SEP]"), special_piece("[PAD]")});
    template_processing["special_tokens"]["[PAD]"] = special_entry("[PAD]", 0);
    const json sequence = {{"type", "Sequence"},
                           {"processors", json::array({{{"type", "ByteLevel"}, {"add_prefix_space", false},
                                                        {"trim_offsets", false}, {"use_regex", true}},
                                                       template_processing})}};
    options.tokenizer_path = dir.write("tokenizer.json", bert_like(sequence).dump());
    options.text = "the cat";
    CHECK(tokenize(options) == std::vector<std::string>{R"({"line":1,"window":0,"ids":[4,5,3,0],)"
                                                        R"("tokens":["the","cat","[SEP]","[PAD]"],)"
                                                        R"("spans":[[0,3],[4,7],[0,0],[0,0]]})"});
    options.max_length = 3;  // one word and the two suffix tokens per window
    CHECK(tokenize(options).size() == 2);
  }
  SECTION("headscan.json's bos_token replaces the prefix; the template's suffix stays") {
    options.tokenizer_path = dir.write("tokenizer.json", bert_like(cls_sep_template()).dump());
    headscan::ModelMetadata metadata;
    metadata.bos_token = "[PAD]";
    const headscan::TextSetup setup =
        headscan::resolve_text_setup(headscan::TextSources{options.tokenizer_path, "", "", &metadata, 8});
    CHECK(setup.shape.bos_id == 0);
    CHECK(setup.shape.suffix_ids == std::vector<std::int64_t>{3});
    CHECK(setup.shape.room() == 6);
  }
  SECTION("max_length must leave room for text after BOS and the suffix") {
    options.tokenizer_path = dir.write("tokenizer.json", bert_like(cls_sep_template()).dump());
    options.max_length = 2;
    CHECK_THROWS_WITH(tokenize(options), Catch::Contains("max_length 2 leaves no room for text") &&
                                             Catch::Contains("[CLS]") && Catch::Contains("[SEP]") &&
                                             Catch::Contains("at least 3"));
  }
  SECTION("a suffix token missing from the vocabulary") {
    json template_processing = cls_sep_template();
    template_processing["single"][2] = special_piece("</s>");
    template_processing["special_tokens"]["</s>"] = special_entry("</s>", 9);
    options.tokenizer_path = dir.write("tokenizer.json", bert_like(template_processing).dump());
    CHECK_THROWS_WITH(tokenize(options), Catch::Contains("\"</s>\"") && Catch::Contains("not in its vocabulary"));
  }
}

// A line over kLongLineBytes is tokenized in its parts, as the analysis does, and never held whole:
// the windows are those of the parts' tokens one after the other, spans counted over the line.
TEST_CASE("tokenize cuts a long line's windows from its parts, as the analysis does", "[tokenizer][tokenize]") {
  TempDir dir;
  const json spec = llama_like();
  headscan::TokenizeOptions options;
  options.tokenizer_path = dir.write("tokenizer.json", spec.dump());
  options.max_length = 512;
  std::string line;
  for (int i = 0; line.size() <= headscan::kLongLineBytes + 3 * headscan::kLinePartBytes / 2; ++i) {
    line += i % 5 == 0 ? "Hi 你   " : "Hi ";
  }
  options.input_path = dir.write("long.txt", line + "\nHi\n");
  const std::vector<std::string> plain = tokenize(options);
  options.input_path = dir.write("long.txt.gz", headscan::testing::compressed(line + "\nHi\n", ARCHIVE_FILTER_GZIP));
  CHECK(tokenize(options) == plain);

  const auto tokenizer = build(spec);
  std::vector<std::int64_t> expected;
  for (std::size_t begin = 0; begin < line.size();) {
    const std::size_t end = headscan::line_part_end(line, begin);
    for (const headscan::Token& token : tokenizer->encode(std::string_view(line).substr(begin, end - begin))) {
      expected.push_back(token.id);
    }
    begin = end;
  }
  std::vector<std::int64_t> found;
  std::size_t windows = 0;
  std::int64_t last_end = 0;
  bool in_order = true;  // spans in code points of the whole line, one after the other
  for (const std::string& text : plain) {
    const json window = json::parse(text);
    if (window["line"] != 1) continue;
    CHECK(window["window"] == windows);
    ++windows;
    const auto ids = window["ids"].get<std::vector<std::int64_t>>();
    CHECK(ids.front() == 1);  // <s>
    found.insert(found.end(), ids.begin() + 1, ids.end());
    for (std::size_t i = 1; i < window["spans"].size(); ++i) {
      in_order = in_order && window["spans"][i][0].get<std::int64_t>() >= last_end - 1;  // byte pieces share one
      last_end = window["spans"][i][1].get<std::int64_t>();
    }
  }
  CHECK(in_order);
  CHECK(found.size() == expected.size());
  const bool same_ids = found == expected;  // (not expanded: a million ids)
  CHECK(same_ids);
  CHECK(windows == (expected.size() + 510) / 511);
  CHECK(last_end == static_cast<std::int64_t>(headscan::code_points_before(line).back()));
  CHECK(json::parse(plain.back())["line"] == 2);
}

TEST_CASE("post-processors: prefix and suffix of a single text", "[tokenizer][tokenize]") {
  SECTION("a Sequence applies its processors in order, each around the text so far") {
    json outer = cls_sep_template();
    outer["single"] = json::array({special_piece("[PAD]"), text_piece(), special_piece("[UNK]")});
    outer["special_tokens"] = {{"[PAD]", special_entry("[PAD]", 0)}, {"[UNK]", special_entry("[UNK]", 1)}};
    const json bert = {{"type", "BertProcessing"}, {"sep", {"[SEP]", 3}}, {"cls", {"[CLS]", 2}}};
    // The tokenizers library: [0, 2, 4, 5, 3, 1] for "the cat".
    const auto tokenizer = build(bert_like({{"type", "Sequence"}, {"processors", json::array({bert, outer})}}));
    CHECK(tokenizer->template_prefix() == std::vector<std::string>{"[PAD]", "[CLS]"});
    CHECK(tokenizer->template_suffix() == std::vector<std::string>{"[SEP]", "[UNK]"});
    // After a TemplateProcessing the library panics (another template) or reads a pair of texts.
    CHECK_THAT(build_error(bert_like({{"type", "Sequence"}, {"processors", json::array({outer, bert})}})),
               Catch::Contains("post_processor.processors[1]") && Catch::Contains("after the TemplateProcessing"));
  }
  SECTION("a template with its text twice") {
    json twice = cls_sep_template();
    twice["single"] = json::array({text_piece(), special_piece("[SEP]"), text_piece()});
    CHECK_THAT(build_error(bert_like(twice)), Catch::Contains("post_processor.single[2]"));
  }
  SECTION("ByteLevel and null add nothing") {
    CHECK(build(bert_like(nullptr))->template_suffix().empty());
    CHECK(build(bert_like({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}}))
              ->template_suffix()
              .empty());
  }
}

TEST_CASE("code_points_before counts UTF-8 characters", "[tokenizer][tokenize]") {
  // Bytes: a 0, 你 1..3, 😀 4..7, b 8; inside a character the count includes that character.
  CHECK(headscan::code_points_before("a你😀b") == std::vector<std::size_t>{0, 1, 2, 2, 2, 3, 3, 3, 3, 4});
  CHECK(headscan::code_points_before("") == std::vector<std::size_t>{0});
}

TEST_CASE("choose_bos: headscan.json first, else the template's single leading token", "[tokenizer][tokenize]") {
  const auto tokenizer = build(llama_like());
  SECTION("headscan.json's bos_token wins") {
    const auto bos = headscan::choose_bos(*tokenizer, "</s>", "m.pt:headscan.json");
    REQUIRE(bos);
    CHECK(bos->id == 2);
    CHECK(bos->source == "headscan.json");
  }
  SECTION("the template's <s> when headscan.json names none") {
    const auto bos = headscan::choose_bos(*tokenizer, "", "m.pt:headscan.json");
    REQUIRE(bos);
    CHECK(bos->id == 1);
    CHECK(bos->token == "<s>");
    CHECK(bos->source == "tokenizer template");
  }
  SECTION("a bos_token missing from the vocabulary") {
    CHECK_THROWS_WITH(headscan::choose_bos(*tokenizer, "<bos>", "m.pt:headscan.json"),
                      Catch::Contains("m.pt:headscan.json") && Catch::Contains("\"<bos>\""));
  }
  SECTION("a template with two leading tokens needs bos_token") {
    json spec = llama_like();
    json& single = spec["post_processor"]["single"];
    single.insert(single.begin(), json::object({{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}));
    spec["post_processor"]["special_tokens"]["</s>"] = {{"id", "</s>"}, {"ids", {2}}, {"tokens", {"</s>"}}};
    const auto two = build(spec);
    CHECK(two->template_prefix() == std::vector<std::string>{"</s>", "<s>"});
    CHECK_THROWS_WITH(headscan::choose_bos(*two, "", "m.pt:headscan.json"),
                      Catch::Contains("2 tokens") && Catch::Contains("bos_token"));
    CHECK(headscan::choose_bos(*two, "<s>", "m.pt:headscan.json")->id == 1);
  }
}

TEST_CASE("tokenize MODEL.pt uses the archive's tokenizer.json and headscan.json", "[tokenizer][tokenize][e2e]") {
  headscan::TokenizeOptions options;
  options.model_path = fixture("gpt2.pt");  // WordLevel w3..w63, bos_token <s>, max_length 32
  options.text = "w3 w4  zz";
  CHECK(tokenize(options) == std::vector<std::string>{R"({"line":1,"window":0,"ids":[0,3,4,1],)"
                                                      R"("tokens":["<s>","w3","w4","<unk>"],)"
                                                      R"("spans":[[0,0],[0,2],[3,5],[7,9]]})"});
  SECTION("windows follow headscan.json's max_length") {
    std::string line;
    for (int i = 0; i < 40; ++i) line += "w5 ";
    options.text = line;
    const std::vector<std::string> windows = tokenize(options);
    REQUIRE(windows.size() == 2);  // 31 + 9 words, each window with BOS
    CHECK(json::parse(windows[0])["ids"].size() == 32);
    CHECK(json::parse(windows[1])["ids"].size() == 10);
    CHECK(json::parse(windows[1])["window"] == 1);
  }
  SECTION("--tokenizer overrides the embedded tokenizer, headscan.json still gives BOS") {
    TempDir dir;
    json spec = json::parse(headscan::testing::read_json(fixture("tokenizer.json")).dump());
    options.tokenizer_path = dir.write("tokenizer.json", spec.dump());
    options.text = "w9";
    CHECK(tokenize(options) ==
          std::vector<std::string>{R"({"line":1,"window":0,"ids":[0,9],"tokens":["<s>","w9"],"spans":[[0,0],[0,2]]})"});
  }
  SECTION("a model file that is not an archive") {
    TempDir dir;
    options.model_path = dir.write("model.pt", "not a zip");
    CHECK_THROWS_WITH(tokenize(options), Catch::Contains("model.pt") && Catch::Contains("TorchScript archive"));
  }
}

TEST_CASE("headscan tokenize on the command line", "[tokenizer][tokenize][cli][e2e]") {
  TempDir dir;
  const std::string tokenizer = dir.write("tokenizer.json", llama_like().dump());
  const std::string corpus = dir.write("corpus.txt", "Hi\n");

  SECTION("--tokenizer FILE and a text file") {
    const auto result = run_headscan({"tokenize", "--tokenizer", tokenizer, corpus});
    CHECK(result.exit_code == 0);
    CHECK(result.out == "{\"line\":1,\"window\":0,\"ids\":[1,10],\"tokens\":[\"<s>\",\"▁Hi\"],\"spans\":[[0,0],[0,2]]}\n");
    CHECK_THAT(result.err, Catch::Contains("BOS: <s>"));
  }
  SECTION("MODEL.pt and --text") {
    const auto result = run_headscan({"tokenize", fixture("gpt2.pt"), "--text", "w3", "-q"});
    CHECK(result.exit_code == 0);
    CHECK(result.out == "{\"line\":1,\"window\":0,\"ids\":[0,3],\"tokens\":[\"<s>\",\"w3\"],\"spans\":[[0,0],[0,2]]}\n");
    CHECK(result.err.empty());
  }
  SECTION("no tokenizer is a usage error") {
    const auto result = run_headscan({"tokenize", "--text", "hi"});
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Contains("--tokenizer"));
  }
  SECTION("an unsupported tokenizer type names itself and the file") {
    json spec = llama_like();
    spec["model"]["type"] = "CharLevel";
    const std::string bad = dir.write("bad.json", spec.dump());
    const auto result = run_headscan({"tokenize", "--tokenizer", bad, corpus});
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Contains("bad.json") && Catch::Contains("\"CharLevel\"") &&
                               Catch::Contains("supported: BPE, WordPiece, Unigram, WordLevel"));
  }
  SECTION("help names the subcommand; the analysis still takes MODEL CORPUS") {
    const auto help = run_headscan({"--help"});
    CHECK(help.exit_code == 0);
    CHECK_THAT(help.out, Catch::Contains("headscan tokenize"));
    const auto tokenize_help = run_headscan({"tokenize", "--help"});
    CHECK(tokenize_help.exit_code == 0);
    CHECK_THAT(tokenize_help.out, Catch::Contains("--tokenizer") && Catch::Contains("--max-length"));
    const auto analysis = run_headscan({(dir / "absent.pt").string(), corpus});
    CHECK(analysis.exit_code == 2);
    CHECK_THAT(analysis.err, Catch::Contains("absent.pt"));
  }
}
