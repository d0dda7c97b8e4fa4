// Windows of max_length with BOS, and batches of equal or padded length in bounded memory.
#include <set>

#include <catch2/catch.hpp>

#include "analyzer/run/sequences.h"

using headscan::Batcher;
using headscan::make_sequences;
using headscan::Sequence;
using headscan::SequenceShape;
using headscan::Token;

namespace {

// Ids 0..9 are words, 100 is special.
class DigitTokenizer : public headscan::Tokenizer {
 public:
  std::vector<Token> encode(std::string_view) const override { return {}; }
  std::int64_t vocab_size() const override { return 101; }
  std::optional<std::int64_t> token_to_id(std::string_view) const override { return std::nullopt; }
  std::string id_to_piece(std::int64_t id) const override { return std::to_string(id); }
  bool is_special(std::int64_t id) const override { return id == 100; }
  std::string describe() const override { return "digits"; }
};

std::vector<Token> tokens(const std::vector<std::int64_t>& ids) {
  std::vector<Token> result;
  for (auto id : ids) result.push_back(Token{id, std::to_string(id), 0, 0});
  return result;
}

Sequence sequence_of_length(std::size_t length, std::size_t line) {
  Sequence sequence;
  sequence.ids.assign(length, 1);
  sequence.special.assign(length, 0);
  sequence.line_number = line;
  return sequence;
}

}  // namespace

TEST_CASE("documents are cut into windows with BOS prepended", "[sequences]") {
  DigitTokenizer tokenizer;
  SECTION("a long document gives consecutive windows of max_length - 1 tokens after BOS") {
    const auto sequences = make_sequences(tokens({1, 2, 3, 4, 5, 6, 7}), tokenizer, SequenceShape{50, 4, {}}, 9);
    REQUIRE(sequences.size() == 3);
    CHECK((sequences[0].ids == std::vector<std::int64_t>{50, 1, 2, 3}));
    CHECK((sequences[1].ids == std::vector<std::int64_t>{50, 4, 5, 6}));
    CHECK((sequences[2].ids == std::vector<std::int64_t>{50, 7}));
    CHECK(sequences[2].window == 2);
    CHECK(sequences[2].line_number == 9);
    CHECK((sequences[0].special == std::vector<std::uint8_t>{1, 0, 0, 0}));
  }
  SECTION("without BOS the windows hold max_length tokens") {
    const auto sequences = make_sequences(tokens({1, 100, 3, 4, 5}), tokenizer, SequenceShape{std::nullopt, 4, {}}, 1);
    REQUIRE(sequences.size() == 2);
    CHECK((sequences[0].ids == std::vector<std::int64_t>{1, 100, 3, 4}));
    CHECK((sequences[0].special == std::vector<std::uint8_t>{0, 1, 0, 0}));
    CHECK((sequences[1].ids == std::vector<std::int64_t>{5}));
  }
  SECTION("a document without tokens gives no sequence") {
    CHECK(make_sequences({}, tokenizer, SequenceShape{50, 4, {}}, 1).empty());
    CHECK(make_sequences({}, tokenizer, SequenceShape{50, 4, {51}}, 1).empty());
  }
}

TEST_CASE("every window ends with the template's suffix", "[sequences]") {
  DigitTokenizer tokenizer;
  SECTION("[CLS] text [SEP]: windows of max_length - 2 text tokens; the suffix is special and no query") {
    const SequenceShape shape{50, 5, {51}};
    CHECK(shape.room() == 3);
    const auto sequences = make_sequences(tokens({1, 2, 100, 4, 5}), tokenizer, shape, 3);
    REQUIRE(sequences.size() == 2);
    CHECK((sequences[0].ids == std::vector<std::int64_t>{50, 1, 2, 100, 51}));
    CHECK((sequences[0].special == std::vector<std::uint8_t>{1, 0, 0, 1, 1}));
    CHECK(sequences[0].suffix_length == 1);
    CHECK((sequences[1].ids == std::vector<std::int64_t>{50, 4, 5, 51}));
    CHECK((sequences[1].special == std::vector<std::uint8_t>{1, 0, 0, 1}));
    CHECK(sequences[1].window == 1);
  }
  SECTION("a suffix of two tokens and no BOS (T5's \"$A </s>\" with one more)") {
    const SequenceShape shape{std::nullopt, 4, {51, 52}};
    CHECK(shape.room() == 2);
    const auto sequences = make_sequences(tokens({1, 2, 3}), tokenizer, shape, 1);
    REQUIRE(sequences.size() == 2);
    CHECK((sequences[0].ids == std::vector<std::int64_t>{1, 2, 51, 52}));
    CHECK((sequences[0].special == std::vector<std::uint8_t>{0, 0, 1, 1}));
    CHECK(sequences[0].suffix_length == 2);
    CHECK((sequences[1].ids == std::vector<std::int64_t>{3, 51, 52}));
  }
  SECTION("no suffix: the windows of before") {
    CHECK(SequenceShape{50, 4, {}}.room() == 3);
    CHECK(make_sequences(tokens({1}), tokenizer, SequenceShape{50, 4, {}}, 1).front().suffix_length == 0);
  }
}

TEST_CASE("words of windows with a suffix: the suffix belongs to no word", "[sequences]") {
  DigitTokenizer tokenizer;
  const SequenceShape shape{50, 4, {51}};
  // Words: 0 = token 0, 1 = tokens 1..2; word 1 depends on word 0.
  headscan::ParsedSentence sentence;
  sentence.words.resize(2);
  sentence.words[1].head = 0;
  sentence.words[1].relation = "obj";
  sentence.words[0].head = -1;
  auto sequences = make_sequences(tokens({1, 2, 3}), tokenizer, shape, 1);
  REQUIRE(sequences.size() == 2);  // [50 1 2 51] [50 3 51]
  headscan::attach_words(sequences, {0, 1, 1}, sentence, shape);
  CHECK((sequences[0].words->token_word == std::vector<int>{-1, 0, 1, -1}));
  CHECK(sequences[0].words->words == 2);
  REQUIRE(sequences[0].words->arcs.size() == 1);
  CHECK(sequences[0].words->arcs[0].dependent == 1);
  CHECK(sequences[0].words->arcs[0].head == 0);
  CHECK((sequences[1].words->token_word == std::vector<int>{-1, 0, -1}));
  CHECK(sequences[1].words->words == 1);
  CHECK(sequences[1].words->arcs.empty());
}

TEST_CASE("batches group equal lengths, or pad neighbours when allowed", "[sequences]") {
  const std::vector<std::size_t> lengths = {5, 3, 5, 3, 7, 5, 3, 2};
  SECTION("equal-length batches") {
    Batcher batcher(2, /*allow_padding=*/false, 100);
    std::vector<std::vector<Sequence>> batches;
    for (std::size_t k = 0; k < lengths.size(); ++k) {
      batcher.add(sequence_of_length(lengths[k], k));
      for (auto& batch : batcher.take_ready()) batches.push_back(std::move(batch));
    }
    for (auto& batch : batcher.flush()) batches.push_back(std::move(batch));
    std::size_t total = 0;
    for (const auto& batch : batches) {
      CHECK(batch.size() <= 2);
      for (const auto& sequence : batch) CHECK(sequence.ids.size() == batch.front().ids.size());
      total += batch.size();
    }
    CHECK(total == lengths.size());
    // The first full bucket goes as soon as it is full: lines 0 and 2 (length 5).
    CHECK(batches[0][0].line_number == 0);
    CHECK(batches[0][1].line_number == 2);
  }
  SECTION("padded batches take neighbours in length order") {
    Batcher batcher(3, /*allow_padding=*/true, 100);
    for (std::size_t k = 0; k < lengths.size(); ++k) batcher.add(sequence_of_length(lengths[k], k));
    const auto batches = batcher.flush();
    std::vector<std::size_t> sizes;
    for (const auto& batch : batches) sizes.push_back(batch.size());
    // Full equal-length buckets (three 5s, three 3s) left as soon as they filled; then 2 and 7.
    REQUIRE((sizes == std::vector<std::size_t>{3, 3, 2}));
    CHECK(batches[2][0].ids.size() == 2);
    CHECK(batches[2][1].ids.size() == 7);
  }
  SECTION("the buffer stays bounded") {
    Batcher batcher(4, /*allow_padding=*/false, 8);
    std::size_t taken = 0;
    for (std::size_t k = 0; k < 100; ++k) {
      batcher.add(sequence_of_length(2 + k % 50, k));  // rarely two of one length
      for (const auto& batch : batcher.take_ready()) taken += batch.size();
      CHECK(k + 1 - taken <= 8);
    }
    for (const auto& batch : batcher.flush()) taken += batch.size();
    CHECK(taken == 100);
  }
  SECTION("the same input gives the same batches") {
    auto run = [&] {
      Batcher batcher(3, true, 4);
      std::vector<std::size_t> order;
      for (std::size_t k = 0; k < lengths.size(); ++k) {
        batcher.add(sequence_of_length(lengths[k], k));
        for (const auto& batch : batcher.take_ready()) {
          for (const auto& sequence : batch) order.push_back(sequence.line_number);
        }
      }
      for (const auto& batch : batcher.flush()) {
        for (const auto& sequence : batch) order.push_back(sequence.line_number);
      }
      return order;
    };
    const auto order = run();
    CHECK(order == run());
    CHECK(std::set<std::size_t>(order.begin(), order.end()).size() == lengths.size());
  }
}
