// Syntactic heads: word-level argmax, words that share tokens (multiword tokens), visibility in
// causal models, and whole runs on a planted bidirectional model over gold CoNLL-U and over the
// same sentences parsed by link-grammar (tests/fixtures/make_syntax_models.py).
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>
// LibTorch's glog defines CHECK as an abort; the tests mean Catch's.
#undef CHECK
#include <catch2/catch.hpp>

#include "analyzer/corpus/conllu.h"
#include "analyzer/corpus/link_grammar_parser.h"
#include "analyzer/corpus/sequence_words.h"
#include "analyzer/run/analysis.h"
#include "analyzer/run/sequences/sequences.h"
#include "heads/registry.h"
#include "heads/syntactic.h"
#include "tests/fixtures.h"

using namespace headscan;
using headscan::testing::fixture;
using headscan::testing::read_json;
using headscan::testing::TempDir;

TEST_CASE("word-level attention sums a word's columns and argmaxes over the other words", "[syntax]") {
  // One sequence, 5 tokens: BOS, "un" "able" (word 0), "dog" (word 1), "runs" (word 2).
  at::Tensor attention = torch::zeros({1, 2, 5, 5});
  // Head 0: "dog" puts 0.3 + 0.3 on the two tokens of word 0 and 0.4 on "runs": word 0 wins
  // (0.6), though its best token (0.3) loses to "runs" (0.4).
  attention[0][0][3] = torch::tensor({0.0, 0.3, 0.3, 0.0, 0.4});
  // Head 1: "runs" attends itself most, then ties between words 0 and 1: self is excluded and the
  // tie goes to the lowest index.
  attention[0][1][4] = torch::tensor({0.0, 0.1, 0.1, 0.2, 0.6});
  // Rows of word 0's two tokens: mean over them picks word 2 for head 0.
  attention[0][0][1] = torch::tensor({0.0, 0.5, 0.0, 0.2, 0.3});
  attention[0][0][2] = torch::tensor({0.0, 0.0, 0.5, 0.3, 0.2});  // sum: word 1 0.5, word 2 0.5 → tie → 1
  const at::Tensor token_word = torch::tensor({3, 0, 0, 1, 2}, torch::kInt64).view({1, 5});  // 3: no word
  const at::Tensor predicted = predicted_words(attention, token_word, 3, torch::full({1}, 3, torch::kInt64));
  CHECK(predicted.sizes() == at::IntArrayRef({1, 2, 3}));
  CHECK(predicted[0][0][1].item<std::int64_t>() == 0);
  CHECK(predicted[0][1][2].item<std::int64_t>() == 0);
  CHECK(predicted[0][0][0].item<std::int64_t>() == 1);
}

namespace {

// "I don't know gimme" as EWT splits it: I, do, n't, know, gim, me (words 0-5), "don't" and
// "gimme" multiword tokens. Arcs: I -nsubj-> know, do -aux-> know, n't -advmod-> know,
// gim -parataxis-> know, and me -obj-> gim inside "gimme". Tokens after BOS: "I", "don", "'t",
// "know", "gimme": "don" and "'t" straddle the words "do" and "n't", and belong to both.
struct MultiwordBatch {
  ParsedSentence sentence;
  std::vector<Sequence> sequences = std::vector<Sequence>(1);
  at::Tensor ids = torch::zeros({1, 6}, torch::kInt64);
  at::Tensor valid = torch::ones({1, 6}, torch::kBool);
  at::Tensor special = torch::tensor({1, 0, 0, 0, 0, 0}, torch::kBool).view({1, 6});
  at::Tensor idf = torch::zeros({1, 6});
  at::Tensor attention = torch::zeros({1, 1, 6, 6});
  std::vector<const SequenceWords*> per_sequence;

  MultiwordBatch() {
    const std::vector<std::pair<int, std::string>> arcs = {{3, "nsubj"}, {3, "aux"}, {3, "advmod"},
                                                           {-1, ""},     {3, "parataxis"}, {4, "obj"}};
    const std::vector<std::pair<std::size_t, std::size_t>> spans = {{0, 1}, {2, 7}, {2, 7}, {8, 12}, {13, 18}, {13, 18}};
    for (std::size_t word = 0; word < arcs.size(); ++word) {
      ParsedWord parsed;
      std::tie(parsed.begin, parsed.end) = spans[word];
      std::tie(parsed.head, parsed.relation) = arcs[word];
      parsed.continues_multiword = word == 2 || word == 5;
      sentence.words.push_back(parsed);
    }
    SequenceShape shape;
    shape.bos_id = 0;
    sequences[0].ids = {0, 1, 1, 1, 1, 1};
    attach_words(sequences, /*token_word=*/{0, 1, 1, 3, 4}, sentence, shape);
    per_sequence = {sequences[0].words.get()};
    // Rows: BOS, I, don, 't, know, gimme; columns the same.
    const std::vector<std::vector<double>> rows = {
        {1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6},
        // I: itself most (never predicted), then know and gimme tie (0.2): the lower, know.
        {0.2, 0.3, 0.05, 0.05, 0.2, 0.2},
        // don and 't, the rows of both "do" and "n't": their own token (1.05 together) is no
        // candidate; know 0.35, gimme 0.4, I 0.2: gimme, though "don" alone would say know.
        {0.0, 0.1, 0.3, 0.3, 0.3, 0.0},
        {0.0, 0.1, 0.2, 0.25, 0.05, 0.4},
        // know: "don't" 0.4 (0.3 + 0.1) over I and gimme (0.2 each).
        {0.1, 0.2, 0.3, 0.1, 0.1, 0.2},
        // gimme: I.
        {0.1, 0.4, 0.1, 0.1, 0.1, 0.2},
    };
    for (std::size_t row = 0; row < rows.size(); ++row) {
      attention[0][0][static_cast<std::int64_t>(row)] = torch::tensor(rows[row]).to(torch::kFloat);
    }
  }
  BatchContext context(std::int64_t index) const {
    return BatchContext{ids, valid, valid, special, idf, /*causal=*/false, true, BatchSource::corpus, index, &per_sequence};
  }
};

}  // namespace

TEST_CASE("the words of a multiword token share its tokens: one word to attend to and from", "[syntax]") {
  MultiwordBatch batch;
  const SequenceWords& words = *batch.per_sequence.front();
  CHECK(words.token_word == std::vector<int>{-1, 0, 1, 1, 2, 3});
  CHECK(words.words == 4);
  // Local words I 0, don't 1, know 2, gimme 3; offsets in the sentence's words; me -obj-> gim,
  // inside "gimme", is left out.
  std::vector<std::string> arcs;
  for (const WordArc& arc : words.arcs) {
    arcs.push_back(arc.relation + " " + std::to_string(arc.dependent) + "→" + std::to_string(arc.head) + " " +
                   std::to_string(arc.offset));
  }
  CHECK(arcs == std::vector<std::string>{"nsubj 0→2 3", "aux 1→2 2", "advmod 1→2 1", "parataxis 3→2 -1"});

  at::Tensor token_word = torch::tensor(std::vector<std::int64_t>{4, 0, 1, 1, 2, 3}, torch::kInt64).view({1, 6});
  const at::Tensor predicted = predicted_words(batch.attention, token_word, 4, torch::full({1}, 4, torch::kInt64));
  CHECK(predicted[0][0].equal(torch::tensor({2, 3, 1, 0}, torch::kInt64)));
}

TEST_CASE("a prediction of a word that shares the target's tokens is right; arcs inside a token are not scored",
          "[syntax]") {
  MultiwordBatch batch;
  auto classifier = make_syntactic_classifier();
  classifier->begin(ModelShape{1, 1, false});
  for (int index = 0; index < 3; ++index) classifier->observe(0, batch.attention, batch.context(index));
  nlohmann::ordered_json scores = nlohmann::ordered_json::object();
  std::vector<std::string> labels;
  HeadVerdict verdict{scores, labels};
  classifier->finalize(0, 0, {{"syntactic", 0.1}, {"syntactic_support", 3}}, verdict);
  const auto& table = scores["syntactic"];
  // nsubj: I predicts know (the tie), right; know predicts "don't", wrong: d2h. aux and advmod:
  // "do" and "n't" predict gimme, wrong; know predicts "don't", the word "do", right for aux and,
  // sharing the tokens of "n't", right for advmod: h2d. parataxis: gimme predicts I, know
  // predicts "don't": both wrong, d2h. The baseline offsets count the sentence's words.
  CHECK(table.size() == 4);
  CHECK_FALSE(table.contains("obj"));
  const auto check = [&](const std::string& relation, const std::string& direction, double accuracy, int offset) {
    INFO(relation);
    CHECK(table[relation]["direction"] == direction);
    CHECK(table[relation]["accuracy"] == accuracy);
    CHECK(table[relation]["baseline"] == 1.0);
    CHECK(table[relation]["baseline_offset"] == offset);
    CHECK(table[relation]["support"] == 3);
  };
  check("nsubj", "d2h", 1.0, 3);
  check("aux", "h2d", 1.0, -2);
  check("advmod", "h2d", 1.0, -1);
  check("parataxis", "d2h", 0.0, -1);
  CHECK(labels.empty());
}

namespace {

// A causal batch of one sequence: BOS + 4 words of one token each; arcs 1 → 0 (amod, head left
// of its dependent), 2 → 3 (nsubj, head right). Head 0 attends the previous token.
struct CausalBatch {
  at::Tensor ids = torch::zeros({1, 5}, torch::kInt64);
  at::Tensor valid = torch::ones({1, 5}, torch::kBool);
  at::Tensor special = torch::tensor({1, 0, 0, 0, 0}, torch::kBool).view({1, 5});
  at::Tensor idf = torch::zeros({1, 5});
  at::Tensor attention = torch::zeros({1, 1, 5, 5});
  SequenceWords words;
  std::vector<const SequenceWords*> per_sequence{&words};

  CausalBatch() {
    attention[0][0][0][0] = 1.0;
    for (int i = 1; i < 5; ++i) attention[0][0][i][i - 1] = 1.0;
    words.token_word = {-1, 0, 1, 2, 3};
    words.words = 4;
    words.arcs = {WordArc{1, 0, "amod", -1}, WordArc{2, 3, "nsubj", 1}};
  }
  BatchContext context(std::int64_t index) const {
    return BatchContext{ids, valid, valid, special, idf, /*causal=*/true, true, BatchSource::corpus, index, &per_sequence};
  }
};

}  // namespace

TEST_CASE("causal models score only arcs whose target the query can see", "[syntax][e2e]") {
  CausalBatch batch;
  auto classifier = make_syntactic_classifier();
  classifier->begin(ModelShape{1, 1, true});
  for (int index = 0; index < 20; ++index) classifier->observe(0, batch.attention, batch.context(index));
  nlohmann::ordered_json scores = nlohmann::ordered_json::object();
  std::vector<std::string> labels;
  HeadVerdict verdict{scores, labels};
  classifier->finalize(0, 0, {{"syntactic", 0.1}, {"syntactic_support", 20}}, verdict);
  // amod: the dependent (word 1) sees its head (word 0), d2h only; the previous-token head gets
  // it right every time, as does the baseline (offset −1). nsubj: the head (word 3) sees its
  // dependent, h2d only, also at offset −1.
  const auto& table = scores["syntactic"];
  REQUIRE(table.size() == 2);
  CHECK(table["amod"]["direction"] == "d2h");
  CHECK(table["amod"]["support"] == 20);
  CHECK(table["amod"]["accuracy"] == 1.0);
  CHECK(table["amod"]["baseline"] == 1.0);
  CHECK(table["amod"]["baseline_offset"] == -1);
  CHECK(table["amod"]["passed"] == false);
  CHECK(table["nsubj"]["direction"] == "h2d");
  CHECK(table["nsubj"]["accuracy"] == 1.0);
  CHECK(labels.empty());
}

namespace {

nlohmann::json analyse_syntax(const std::string& corpus, const TempDir& dir, const std::string& parser,
                              const std::string& report) {
  AnalysisOptions options;
  options.model_path = fixture("syntax.pt");
  options.corpus_path = corpus;
  options.output_dir = (dir / report).string();
  options.batch_size = 8;
  options.progress = false;
  options.html = false;
  options.plots = false;
  options.parser = parser;
  run_analysis(options);
  return read_json(dir / report / "heads.json");
}

// Relations that pass, as "relation direction".
std::set<std::string> passed(const nlohmann::json& head) {
  std::set<std::string> relations;
  for (const auto& [relation, entry] : head["scores"]["syntactic"].items()) {
    if (entry["passed"].get<bool>()) relations.insert(relation + " " + entry["direction"].get<std::string>());
  }
  return relations;
}

bool has_label(const nlohmann::json& head, const std::string& label) {
  const auto& labels = head["labels"];
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

void check_planted_heads(const nlohmann::json& report) {
  const auto& heads = report["heads"];
  REQUIRE(heads.size() == 5);
  CHECK(passed(heads[0]) == std::set<std::string>{"nsubj h2d"});
  CHECK(passed(heads[1]) == std::set<std::string>{"obj h2d"});
  CHECK(passed(heads[2]) == std::set<std::string>{"amod d2h"});
  CHECK(heads[0]["scores"]["syntactic"]["nsubj"]["accuracy"] == 1.0);
  CHECK(heads[1]["scores"]["syntactic"]["obj"]["accuracy"] == 1.0);
  CHECK(heads[2]["scores"]["syntactic"]["amod"]["accuracy"] == 1.0);
  for (int h = 0; h < 3; ++h) CHECK(has_label(heads[h], "syntactic"));
  CHECK(heads[3]["primary"] == "previous-token");
  CHECK(passed(heads[3]).empty());
  CHECK(passed(heads[4]).empty());
  CHECK_FALSE(has_label(heads[3], "syntactic"));
  CHECK_FALSE(has_label(heads[4], "syntactic"));
}

// Arcs as "relation dependent-begin→head-begin" (byte offsets in the line).
std::set<std::string> arcs_of(const ParsedSentence& sentence, const std::set<std::string>& relations) {
  std::set<std::string> arcs;
  for (const auto& word : sentence.words) {
    if (word.head >= 0 && relations.count(word.relation)) {
      arcs.insert(word.relation + " " + std::to_string(word.begin) + "→" +
                  std::to_string(sentence.words[static_cast<std::size_t>(word.head)].begin));
    }
  }
  return arcs;
}

}  // namespace

TEST_CASE("planted heads on gold CoNLL-U: verb→subject, verb→object, adjective→noun", "[syntax][planted][e2e]") {
  TempDir dir;
  const nlohmann::json report = analyse_syntax(fixture("syntax_gold.conllu"), dir, "link-grammar", "gold");
  CHECK(report["corpus"]["format"] == "conllu");
  CHECK(report["corpus"]["parser"] == "conllu");
  CHECK(report["corpus"]["parsed_sentences"] == 150);
  CHECK(report["corpus"]["sequences"] == 150);
  check_planted_heads(report);
  // The gold nsubj arcs: one per sentence, seen from both ends in a bidirectional model.
  CHECK(report["heads"][0]["scores"]["syntactic"]["nsubj"]["support"] == 150);
  CHECK(report["thresholds"]["syntactic"] == 0.1);
  CHECK(report["thresholds"]["syntactic_support"] == 20);
}

namespace {

// syntax_gold.conllu with each sentence's last noun and its "." made one multiword token ("cat."
// over "cat" and "."): the same text, so the same tokens, now shared by the two words. The first
// sentence's `# text` gets a "!" its words do not spell.
std::string fuse_final_periods(const TempDir& dir) {
  std::ifstream in(fixture("syntax_gold.conllu"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const auto field = [](const std::string& line, int index) {
    std::size_t begin = 0;
    for (int i = 0; i < index && begin != std::string::npos; ++i) begin = line.find('\t', begin) + 1;
    return line.substr(begin, line.find('\t', begin) - begin);
  };
  std::string fused;
  bool first_text = true;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (first_text && line.rfind("# text = ", 0) == 0) {
      fused += line + "!\n";
      first_text = false;
      continue;
    }
    if (i + 1 < lines.size() && !line.empty() && line[0] != '#' && field(lines[i + 1], 1) == ".") {
      REQUIRE(field(line, 9) == "SpaceAfter=No");
      fused += field(line, 0) + "-" + field(lines[i + 1], 0) + "\t" + field(line, 1) + ".\t_\t_\t_\t_\t_\t_\t_\t_\n";
    }
    fused += line + "\n";
  }
  return dir.write("fused.conllu", fused);
}

}  // namespace

TEST_CASE("planted heads on CoNLL-U with multiword tokens: the object's tokens are the period's too",
          "[syntax][planted][e2e]") {
  TempDir dir;
  const std::string corpus = fuse_final_periods(dir);
  const nlohmann::json report = analyse_syntax(corpus, dir, "link-grammar", "fused");
  CHECK(report["corpus"]["sequences"] == 150);
  const auto& heads = report["heads"];
  REQUIRE(heads.size() == 5);
  CHECK(passed(heads[0]) == std::set<std::string>{"nsubj h2d"});
  CHECK(passed(heads[2]) == std::set<std::string>{"amod d2h"});
  CHECK(heads[2]["scores"]["syntactic"]["amod"]["accuracy"] == 1.0);
  // The verb → object head predicts the object noun, which shares its tokens with the "." after
  // it: right for obj and, now, for punct (with the gold trees' separate "." it is not).
  CHECK(passed(heads[1]) == std::set<std::string>{"obj h2d", "punct h2d"});
  CHECK(heads[1]["scores"]["syntactic"]["obj"]["accuracy"] == 1.0);
  CHECK(heads[1]["scores"]["syntactic"]["punct"]["accuracy"] == 1.0);
  CHECK(heads[1]["scores"]["syntactic"]["punct"]["support"] == 150);
  const std::string mismatch = corpus + ": 1 sentence(s) whose words do not spell their `# text` comment, and the "
                                        "model reads the words' text: line 1 (sent_id 1): the words read \"…cat.\" "
                                        "where `# text` has \"…cat.!\"; check their FORMs, multiword tokens and "
                                        "SpaceAfter=No";
  const auto& warnings = report["warnings"];
  CHECK(std::count(warnings.begin(), warnings.end(), mismatch) == 1);
}

TEST_CASE("link-grammar finds the gold subject, object, amod and det arcs of the synthetic grammar",
          "[syntax][link-grammar][e2e]") {
  ConlluReader gold(fixture("syntax_gold.conllu"));
  std::ifstream text(fixture("syntax_text.txt"));
  LinkGrammarParser parser;
  ConlluSentence sentence;
  std::string line;
  int sentences = 0;
  const std::set<std::string> relations = {"nsubj", "obj", "amod", "det"};
  while (gold.next(sentence)) {
    REQUIRE(std::getline(text, line));
    REQUIRE(line == sentence.text);
    INFO(line);
    const LineParse parse = parser.parse_line(line);
    REQUIRE(parse.parsed == 1);
    CHECK(arcs_of(parse.parse, relations) == arcs_of(sentence.parse, relations));
    ++sentences;
  }
  CHECK(sentences == 150);
}

TEST_CASE("planted heads on the same sentences as plain text parsed by link-grammar", "[syntax][planted][link-grammar][e2e]") {
  TempDir dir;
  const nlohmann::json report = analyse_syntax(fixture("syntax_text.txt"), dir, "link-grammar", "text");
  CHECK(report["corpus"]["format"] == "text");
  CHECK(report["corpus"]["parser"] == "link-grammar");
  CHECK(report["corpus"]["sentences"] == 150);
  CHECK(report["corpus"]["parsed_sentences"] == 150);
  check_planted_heads(report);
}

TEST_CASE("parser none: no syntactic scores, and heads.json says so", "[syntax][e2e]") {
  TempDir dir;
  const nlohmann::json report = analyse_syntax(fixture("syntax_text.txt"), dir, "none", "none");
  CHECK(report["corpus"]["parser"] == "none");
  CHECK(report["corpus"]["parsed_sentences"] == 0);
  for (const auto& head : report["heads"]) {
    CHECK(head["scores"]["syntactic"].empty());
    CHECK_FALSE(has_label(head, "syntactic"));
  }
}
