// Windows of max_length with BOS, and batches of equal or padded length in bounded memory; a
// corpus read as windows, a long line a part at a time.
#include <archive.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <functional>
#include <string>
#include <utility>

#include <catch2/catch.hpp>

#include "analyzer/corpus/document_frequencies.h"
#include "analyzer/corpus/documents.h"
#include "analyzer/corpus/text_lines.h"
#include "analyzer/errors.h"
#include "analyzer/run/sequences/needle_plan.h"
#include "analyzer/run/sequences/probe_budget.h"
#include "analyzer/run/sequences/sequence_reader.h"
#include "analyzer/run/sequences/sequences.h"
#include "tests/fixtures.h"

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

namespace {

// Words between spaces; a word's id is its length (1..99), and no id is special.
class WordLengthTokenizer : public headscan::Tokenizer {
 public:
  std::vector<Token> encode(std::string_view text) const override {
    std::vector<Token> result;
    for (std::size_t begin = text.find_first_not_of(' '); begin != std::string_view::npos;) {
      const std::size_t end = std::min(text.find(' ', begin), text.size());
      result.push_back(Token{static_cast<std::int64_t>(std::min<std::size_t>(end - begin, 99)),
                             std::string(text.substr(begin, end - begin)), begin, end});
      begin = text.find_first_not_of(' ', end);
    }
    return result;
  }
  std::int64_t vocab_size() const override { return 100; }
  std::optional<std::int64_t> token_to_id(std::string_view) const override { return std::nullopt; }
  std::string id_to_piece(std::int64_t id) const override { return std::to_string(id); }
  bool is_special(std::int64_t) const override { return false; }
  std::string describe() const override { return "word lengths"; }
};

}  // namespace

// A line of megabytes in a compressed corpus is tokenized a part at a time and handed on as the
// windows each part completes: never all of its tokens at once, whatever its length (holding
// them took about 100 bytes a token: 3.1 GB for an 80 MB line). The windows are those that
// cutting the whole line's tokens gives.
TEST_CASE("a long line gives its windows a part at a time, the same as cut whole", "[sequences][streaming]") {
  headscan::testing::TempDir dir;
  std::string line;
  for (std::size_t word = 0; line.size() < 3'000'000; ++word) line += std::string(1 + word % 7, 'x') + " ";
  const std::string path =
      dir.write("long.txt.zst", headscan::testing::compressed("a bb\n" + line + "\nccc d\n", ARCHIVE_FILTER_ZSTD));
  const WordLengthTokenizer tokenizer;
  const SequenceShape shape{0, 64, {}};
  std::vector<Sequence> expected;
  for (const auto& [text, number] : {std::pair<std::string, std::size_t>{"a bb", 1}, {line, 2}, {"ccc d", 3}}) {
    for (Sequence& sequence : make_sequences(tokenizer.encode(text), tokenizer, shape, number)) {
      expected.push_back(std::move(sequence));
    }
  }

  headscan::DocumentReader documents(path, "none");
  headscan::SequenceReader reader(documents, tokenizer, shape);
  std::vector<Sequence> read;
  std::vector<Sequence> windows;
  std::size_t calls = 0;
  std::size_t most = 0;
  while (reader.next(windows)) {
    ++calls;
    most = std::max(most, windows.size());
    for (Sequence& sequence : windows) read.push_back(std::move(sequence));
  }
  REQUIRE(read.size() == expected.size());
  for (std::size_t i = 0; i < read.size(); ++i) {
    INFO("window " << i);
    CHECK(read[i].ids == expected[i].ids);
    CHECK(read[i].special == expected[i].special);
    CHECK(read[i].line_number == expected[i].line_number);
    CHECK(read[i].window == expected[i].window);
  }
  // A part of 256 KiB holds at most 128 Ki words (a letter and a space each): its windows, and the
  // tokens of one unfinished window, are all that a call holds.
  CHECK(most <= headscan::kLinePartBytes / 2 / shape.room() + 1);
  CHECK(calls >= 3'000'000 / headscan::kLinePartBytes);

  SECTION("with max_windows, the line is read only as far as they need, and counted once") {
    headscan::DocumentReader again(path, "none");
    headscan::SequenceReader limited(again, tokenizer, shape);
    headscan::DocumentFrequencies counted(tokenizer.vocab_size());
    REQUIRE(limited.next(windows, &counted, 100));  // "a bb": one window
    REQUIRE(limited.next(windows, &counted, 5));
    CHECK(windows.size() == 5);
    CHECK(windows.back().line_number == 2);
    CHECK(windows.back().window == 4);
    CHECK(counted.documents() == 2);  // the long line, closed once its 5 windows were given
    REQUIRE(limited.next(windows, &counted, 5));
    CHECK(windows.front().line_number == 3);
  }
}

namespace {

// A field of /proc/self/status in kB ("VmRSS", "VmHWM"); -1 when absent.
long status_kb(const std::string& field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

}  // namespace

// Peak memory: a zstd file of a few kilobytes holding one line of 32 MB (16 million tokens) is read
// to its end, all its windows made, in a few megabytes. Holding the line's tokens, as the corpus
// pass did without --max-sequences, took over 1 GB here (56 bytes a token) and 3.1 GB for 80 MB.
// GCC says AddressSanitizer with __SANITIZE_ADDRESS__, clang (scripts/sanitize.sh) with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define HEADSCAN_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HEADSCAN_TEST_UNDER_ASAN 1
#endif
#endif

TEST_CASE("a long compressed line is read to its end in bounded memory", "[sequences][streaming]") {
#if defined(HEADSCAN_TEST_UNDER_ASAN)
  WARN("skipped under AddressSanitizer: its quarantine keeps freed memory resident, so the peak measures it");
  return;
#endif
  headscan::testing::TempDir dir;
  std::string path;
  {
    std::string line;
    line.reserve(32'000'002);
    while (line.size() < 32'000'000) line += "x ";
    path = dir.write("long.txt.zst", headscan::testing::compressed(line + "\n", ARCHIVE_FILTER_ZSTD));
  }
  REQUIRE(std::filesystem::file_size(path) < 100'000);
  // Resets the peak (VmHWM) to the present size (Linux 4.0 and later).
  std::ofstream("/proc/self/clear_refs") << "5";
  const long before = status_kb("VmRSS");
  const long reset_peak = status_kb("VmHWM");
  if (before < 0 || reset_peak > before + 1024) {
    WARN("skipped: /proc/self/clear_refs cannot reset the peak resident memory here");
    return;
  }
  const WordLengthTokenizer tokenizer;
  const SequenceShape shape{0, 64, {}};
  headscan::DocumentReader documents(path, "none");
  headscan::SequenceReader reader(documents, tokenizer, shape);
  std::size_t windows = 0;
  std::size_t tokens = 0;
  for (std::vector<Sequence> sequences; reader.next(sequences);) {
    windows += sequences.size();
    for (const Sequence& sequence : sequences) tokens += sequence.ids.size() - 1;
  }
  CHECK(tokens == 16'000'000);
  CHECK(windows == (16'000'000 + 62) / 63);
  const long peak = status_kb("VmHWM");
  INFO("resident " << before << " kB before, peak " << peak << " kB");
  CHECK(peak - before < 64 * 1024);  // measured: 39 MB
}

TEST_CASE("needle lengths: 4096 doubling up to max_length, only max_length up to 4096", "[sequences][needles]") {
  using headscan::default_needle_lengths;
  // A short run keeps one length, max_length.
  CHECK(default_needle_lengths(128) == std::vector<std::int64_t>{128});
  CHECK(default_needle_lengths(4096) == std::vector<std::int64_t>{4096});
  CHECK(default_needle_lengths(4097) == std::vector<std::int64_t>{4096, 4097});
  CHECK(default_needle_lengths(16384) == std::vector<std::int64_t>{4096, 8192, 16384});
  CHECK(default_needle_lengths(20000) == std::vector<std::int64_t>{4096, 8192, 16384, 20000});
  CHECK(default_needle_lengths(131072) == std::vector<std::int64_t>{4096, 8192, 16384, 32768, 65536, 131072});
}

TEST_CASE("needle lengths: above max_length or below a probe's own size are refused", "[sequences][needles]") {
  using Catch::Contains;
  using headscan::check_needle_lengths;
  CHECK_NOTHROW(check_needle_lengths({37, 4096, 8192}, 8192));
  CHECK_NOTHROW(check_needle_lengths({}, 64));
  CHECK_THROWS_AS(check_needle_lengths({4096, 16384}, 8192), headscan::InputError);
  CHECK_THROWS_WITH(check_needle_lengths({4096, 16384}, 8192),
                    Contains("16384 is longer than the run's max_length 8192") && Contains("--max-length"));
  CHECK_THROWS_WITH(check_needle_lengths({36, 128}, 128),
                    Contains("36 is shorter than a needle probe can be") && Contains("from 37 to max_length 128"));
}

TEST_CASE("needle plan: one probe for a model that does not copy, a round per depth for one that copies, rounds "
          "until 20 copy events or 8 haystacks per depth otherwise", "[sequences][needles]") {
  using headscan::kHaystacks;
  using headscan::kPlannedProbes;
  using headscan::NeedleLengthPlan;
  using headscan::NeedleProbeIndex;
  using headscan::needle_haystacks_most;
  CHECK(needle_haystacks_most(kPlannedProbes) == kHaystacks);
  CHECK(needle_haystacks_most(1) == 1);
  CHECK(needle_haystacks_most(3) == 3);
  CHECK(needle_haystacks_most(1000) == kHaystacks);
  // The probes a length runs, round by round, with `copies(haystack, depth)` copy events on each.
  bool cut = false;
  auto run = [&cut](const std::function<std::int64_t(int, int)>& copies, int most, int budget = 40) {
    NeedleLengthPlan plan(most, budget);
    std::vector<std::pair<int, int>> probes;
    for (auto round = plan.next_round(); !round.empty(); round = plan.next_round()) {
      REQUIRE(probes.size() < 100);
      std::int64_t events = 0;
      for (const NeedleProbeIndex& probe : round) {
        probes.emplace_back(probe.haystack, probe.depth);
        events += copies(probe.haystack, probe.depth);
      }
      plan.finish_round(events);
    }
    cut = plan.cut_by_budget();
    return probes;
  };
  const auto every_token = [](int, int) -> std::int64_t { return 11; };
  const auto none = [](int, int) -> std::int64_t { return 0; };
  const auto some = [](int, int) -> std::int64_t { return 3; };
  const auto deepest_only = [](int, int depth) -> std::int64_t { return depth == 4 ? 2 : 0; };
  const auto shallow_only = [](int, int depth) -> std::int64_t { return depth == 0 ? 11 : 0; };
  using Probes = std::vector<std::pair<int, int>>;
  // First haystack 0 at the deepest depth, then haystack 0 at the others: 55 copy events.
  CHECK(run(every_token, kHaystacks) == Probes{{0, 4}, {0, 0}, {0, 1}, {0, 2}, {0, 3}});
  CHECK(run(none, kHaystacks) == Probes{{0, 4}});
  CHECK(run(shallow_only, kHaystacks) == Probes{{0, 4}});  // the deepest needle decides
  // 3, 15, then 30 copy events: a third round, haystack 1 at every depth.
  CHECK(run(some, kHaystacks) ==
        Probes{{0, 4}, {0, 0}, {0, 1}, {0, 2}, {0, 3}, {1, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 4}});
  // 2 copy events per round: 16 after all 8 haystacks at every depth, 40 probes.
  const Probes all = run(deepest_only, kHaystacks);
  CHECK(all.size() == 5 * kHaystacks);
  CHECK(all.back() == std::pair<int, int>{kHaystacks - 1, 4});
  // --probes needles=N: at most N haystacks per depth.
  CHECK(run(some, 1).size() == 5);
  CHECK(run(deepest_only, 2).size() == 10);
  CHECK(run(none, 1) == Probes{{0, 4}});
  CHECK_FALSE(cut);
  // The default run's budget of probes: a round cut short at it, said by cut_by_budget().
  CHECK(run(some, kHaystacks, 3) == Probes{{0, 4}, {0, 0}, {0, 1}});
  CHECK(cut);
  CHECK(run(every_token, kHaystacks, 5).size() == 5);
  CHECK_FALSE(cut);  // 55 copy events: done within the budget
  CHECK(run(none, kHaystacks, 1) == Probes{{0, 4}});
  CHECK_FALSE(cut);
  CHECK(run(some, kHaystacks, 1) == Probes{{0, 4}});
  CHECK(cut);
  CHECK(headscan::needle_probes_within(1000, 400) == 2);
  CHECK(headscan::needle_probes_within(100, 400) == 1);  // at least one probe
  CHECK(headscan::needle_probes_within(1000000, 400) == 5 * kHaystacks);
}
