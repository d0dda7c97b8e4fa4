// Shards and merge (--shard I/N, headscan merge): the merged report is the single run's, bit for
// bit but for the "run" section, on text, CoNLL-U and compressed corpora; and every refusal.
#include <archive.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "analyzer/corpus/text_lines.h"
#include "tests/fixtures.h"

using Catch::Matchers::Contains;
using headscan::testing::fixture;
using headscan::testing::read_file;
using headscan::testing::read_json;
using headscan::testing::run_headscan;
using headscan::testing::TempDir;
using headscan::testing::word_corpus;

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kQuiet = {"-q", "--no-html", "--no-plots"};

std::vector<std::string> joined(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// A corpus of `lines` lines of 1 to 24 words w3..w63, about 110 bytes each: runs of spaces between
// the words make it several chunks (kMinChunkBytes) long for few tokens, so that the tests run fast.
std::string long_word_corpus(int lines, unsigned seed = 7) {
  std::vector<int> lengths;
  for (int i = 0; i < lines; ++i) lengths.push_back(1 + (i * 37 + i / 5) % 24);
  std::string text;
  std::size_t line_start = 0;
  for (char c : word_corpus(lengths, seed)) {
    if (c == '\n') {
      text += std::string(text.size() - line_start < 110 ? 110 - (text.size() - line_start) : 0, ' ');
      text += '\n';
      line_start = text.size();
    } else if (c == ' ') {
      text += "     ";
    } else {
      text += c;
    }
  }
  return text;
}

std::int64_t chunks_of(const std::string& path) {
  const auto size = static_cast<std::int64_t>(fs::file_size(path));
  const auto chunk = static_cast<std::int64_t>(headscan::kMinChunkBytes);
  return (size + chunk - 1) / chunk;
}

// A single run's report directory.
fs::path single_run(const TempDir& dir, const std::string& model, const std::string& corpus, const std::string& name,
                    const std::vector<std::string>& options) {
  const fs::path out = dir / name;
  const auto result = run_headscan(joined({model, corpus, "-o", out.string()}, joined(kQuiet, options)));
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  return out;
}

// The N shards' directories of a run.
std::vector<std::string> shard_runs(const TempDir& dir, const std::string& model, const std::string& corpus,
                                    const std::string& name, int count, const std::vector<std::string>& options) {
  std::vector<std::string> directories;
  for (int index = 0; index < count; ++index) {
    const fs::path out = dir / (name + "-shard" + std::to_string(index));
    const auto result = run_headscan(joined(
        {model, corpus, "--shard", std::to_string(index) + "/" + std::to_string(count), "-o", out.string(), "-q"},
        options));
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(fs::exists(out / "state.json"));
    CHECK_FALSE(fs::exists(out / "heads.json"));
    directories.push_back(out.string());
  }
  return directories;
}

fs::path merge(const TempDir& dir, const std::vector<std::string>& shards, const std::string& name,
               const std::vector<std::string>& options = {}) {
  const fs::path out = dir / name;
  const auto result = run_headscan(joined(joined({"merge"}, shards), joined({"-o", out.string(), "-q"}, options)));
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  return out;
}

// Everything but "run" is equal; so is idf.txt.
void check_same_report(const fs::path& single, const fs::path& merged) {
  nlohmann::json expected = read_json(single / "heads.json");
  nlohmann::json found = read_json(merged / "heads.json");
  CHECK(found["run"]["shards"].get<int>() >= 1);
  expected.erase("run");
  found.erase("run");
  for (const auto& [section, value] : expected.items()) {
    INFO("section " << section);
    CHECK(found[section] == value);
  }
  CHECK(found.size() == expected.size());
  CHECK(read_file(single / "idf.txt") == read_file(merged / "idf.txt"));
}

std::string gzipped(const std::string& data) { return headscan::testing::compressed(data, ARCHIVE_FILTER_GZIP); }

std::int64_t shard_lines(const std::string& directory) {
  return read_json(fs::path(directory) / "state.json")["counts"]["lines"].get<std::int64_t>();
}

}  // namespace

TEST_CASE("merged shards of a text corpus are the single run", "[shards][e2e]") {
  TempDir dir;
  // A random-weight model: its float results change with the batch a sequence is in, so only
  // batches that are the single run's give its numbers.
  const std::string model = fixture("random_gpt2.pt");
  const std::string corpus = dir.write("corpus.txt", long_word_corpus(2800));
  const std::int64_t chunks = chunks_of(corpus);
  REQUIRE(chunks >= 4);
  REQUIRE(chunks < 7);
  const std::vector<std::string> options = {"--parser", "none", "--batch-size", "4"};
  const fs::path single = single_run(dir, model, corpus, "single", options);
  for (int count : {1, 2, 3, 7}) {
    INFO(count << " shards");
    const auto shards = shard_runs(dir, model, corpus, "text" + std::to_string(count), count, options);
    std::int64_t lines = 0;
    int with_lines = 0;
    for (const auto& shard : shards) {
      lines += shard_lines(shard);
      with_lines += shard_lines(shard) > 0 ? 1 : 0;
    }
    CHECK(lines == read_json(single / "heads.json")["corpus"]["lines"].get<std::int64_t>());
    CHECK(with_lines == std::min<std::int64_t>(count, chunks));  // 7 shards of fewer chunks: some are empty
    // In any order.
    std::vector<std::string> reversed(shards.rbegin(), shards.rend());
    check_same_report(single, merge(dir, reversed, "merged" + std::to_string(count), {"--no-html", "--no-plots"}));
  }
}

TEST_CASE("merged shards of a CoNLL-U corpus are the single run", "[shards][e2e]") {
  TempDir dir;
  std::string text;
  for (int copy = 0; copy < 6; ++copy) text += read_file(fixture("syntax_gold.conllu"));
  const std::string corpus = dir.write("corpus.conllu", text);
  REQUIRE(fs::file_size(corpus) > 4 * headscan::kMinChunkBytes);
  const fs::path single = single_run(dir, fixture("syntax.pt"), corpus, "single", {});
  for (int count : {2, 3, 7}) {
    INFO(count << " shards");
    const auto shards = shard_runs(dir, fixture("syntax.pt"), corpus, "conllu" + std::to_string(count), count, {});
    check_same_report(single, merge(dir, shards, "merged" + std::to_string(count), {"--no-html", "--no-plots"}));
    const auto merged = read_json(dir / ("merged" + std::to_string(count)) / "heads.json");
    CHECK(merged["corpus"]["parsed_sentences"].get<int>() == 6 * 150);
  }
}

TEST_CASE("a compressed corpus is shared out by chunks of documents", "[shards][e2e]") {
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt.gz", gzipped(long_word_corpus(900, 3)));
  const std::vector<std::string> options = {"--parser", "none"};
  const fs::path single = single_run(dir, fixture("random_bert.pt"), corpus, "single", options);
  const auto shards = shard_runs(dir, fixture("random_bert.pt"), corpus, "gz", 3, options);
  // 900 lines are chunks of 256, 256, 256 and 132 documents: shard 0 has two of them.
  CHECK(shard_lines(shards[0]) == 256 + 132);
  CHECK(shard_lines(shards[1]) == 256);
  CHECK(read_json(fs::path(shards[1]) / "state.json")["shard"]["slice"] == "documents");
  check_same_report(single, merge(dir, shards, "merged", {"--no-html", "--no-plots"}));
}

TEST_CASE("the merged report draws the single run's examples and plots", "[shards][e2e]") {
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt", long_word_corpus(1500, 5));
  const fs::path single = dir / "single";
  REQUIRE(run_headscan({fixture("random_gpt2.pt"), corpus, "-o", single.string(), "-q", "--parser", "none"}).exit_code == 0);
  const auto shards = shard_runs(dir, fixture("random_gpt2.pt"), corpus, "html", 3, {"--parser", "none"});
  const fs::path merged = merge(dir, shards, "merged");
  check_same_report(single, merged);
  // Every page and plot is the single run's byte for byte (the attention viewer's examples too),
  // but for heads.json's and index.html's run times.
  std::vector<std::string> expected_files;
  std::vector<std::string> found_files;
  for (const auto& entry : fs::recursive_directory_iterator(single)) expected_files.push_back(fs::relative(entry.path(), single));
  for (const auto& entry : fs::recursive_directory_iterator(merged)) found_files.push_back(fs::relative(entry.path(), merged));
  std::sort(expected_files.begin(), expected_files.end());
  std::sort(found_files.begin(), found_files.end());
  CHECK(found_files == expected_files);
  CHECK(expected_files.size() > 20);
  for (const std::string& file : expected_files) {
    if (file == "heads.json" || file == "index.html" || fs::is_directory(single / file)) continue;
    INFO(file);
    CHECK(read_file(merged / file) == read_file(single / file));
  }
}

TEST_CASE("shards of a model with layers without attention merge to the single run's numbering",
          "[shards][layers][e2e]") {
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt", long_word_corpus(600, 3));
  const std::vector<std::string> options = {"--parser", "none", "--ablation", "--ablation-sequences", "4"};
  const fs::path single = single_run(dir, fixture("hybrid.pt"), corpus, "single", options);
  const auto shards = shard_runs(dir, fixture("hybrid.pt"), corpus, "hybrid", 2, options);
  const fs::path merged = merge(dir, shards, "merged");
  check_same_report(single, merged);
  const nlohmann::json report = read_json(merged / "heads.json");
  REQUIRE(report["model"]["layers"].is_array());
  CHECK(report["model"]["layers"].size() == 4);
  for (const auto& head : report["heads"]) CHECK((head["layer"] == 0 || head["layer"] == 2));
  CHECK(fs::exists(merged / "heads" / "L2H3.html"));
  CHECK_FALSE(fs::exists(merged / "heads" / "L1H0.html"));
}

TEST_CASE("shards with ablation merge to the single run's causal evidence", "[shards][ablation][e2e]") {
  TempDir dir;
  std::string text;
  for (int copy = 0; copy < 60; ++copy) text += read_file(fixture("ablation_corpus.txt"));
  const std::string corpus = dir.write("corpus.txt", text);
  const std::vector<std::string> options = {"--parser", "none", "--ablation", "--ablation-sequences", "6"};
  const fs::path single = single_run(dir, fixture("ablation_lm.pt"), corpus, "single", options);
  const auto shards = shard_runs(dir, fixture("ablation_lm.pt"), corpus, "ablation", 3, options);
  check_same_report(single, merge(dir, shards, "merged", {"--no-html", "--no-plots"}));
  CHECK(read_json(dir / "merged" / "heads.json").contains("ablation"));
}

TEST_CASE("merge labels again with new thresholds", "[shards][e2e]") {
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt", long_word_corpus(1500, 9));
  const std::vector<std::string> options = {"--parser", "none"};
  const std::vector<std::string> thresholds = {"--threshold", "previous_token=0.05", "--threshold", "first_token=0.05"};
  const fs::path single = single_run(dir, fixture("random_gpt2.pt"), corpus, "single", joined(options, thresholds));
  const auto shards = shard_runs(dir, fixture("random_gpt2.pt"), corpus, "relabel", 2, options);
  check_same_report(single, merge(dir, shards, "merged", joined({"--no-html", "--no-plots"}, thresholds)));
  const fs::path unchanged = merge(dir, shards, "unchanged", {"--no-html", "--no-plots"});
  CHECK(read_json(unchanged / "heads.json")["thresholds"] != read_json(single / "heads.json")["thresholds"]);
}

TEST_CASE("shards of a run with --probes merge to the single run's, and shards must state the same", "[shards][e2e]") {
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt", long_word_corpus(300, 11));
  const std::string model = fixture("random_gpt2.pt");
  const std::vector<std::string> options = {"--parser", "none", "--probes", "induction=3,needles=none"};
  const fs::path single = single_run(dir, model, corpus, "single", joined(options, {"--no-html", "--no-plots"}));
  const nlohmann::json report = read_json(single / "heads.json");
  REQUIRE(report["probes"]["count"] == 3);
  REQUIRE(report["retrieval"]["note"].get<std::string>().find("--probes") != std::string::npos);
  const auto shards = shard_runs(dir, model, corpus, "probes", 2, options);
  CHECK(read_json(fs::path(shards[0]) / "state.json")["agree"]["probes"] ==
        nlohmann::json{{"induction", 3}, {"needles", "none"}});
  check_same_report(single, merge(dir, shards, "merged", {"--no-html", "--no-plots"}));
  const auto other = shard_runs(dir, model, corpus, "other", 2, {"--parser", "none", "--probes", "none"});
  const fs::path out = dir / "refused";
  const auto result = run_headscan({"merge", shards[0], other[1], "-o", out.string(), "-q"});
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Contains("come from different runs") && Contains("probes"));
}

TEST_CASE("merge refuses shards that do not make one run", "[shards][e2e]") {
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt", long_word_corpus(300, 11));
  const std::string model = fixture("random_gpt2.pt");
  const std::vector<std::string> options = {"--parser", "none"};
  const auto shards = shard_runs(dir, model, corpus, "run", 3, options);
  const fs::path out = dir / "out";
  auto refused = [&](const std::vector<std::string>& directories) {
    const auto result = run_headscan(joined(joined({"merge"}, directories), {"-o", out.string(), "-q"}));
    CHECK(result.exit_code == 2);
    CHECK_FALSE(fs::exists(out));
    return result.err;
  };
  // A copy of shard `index` to damage.
  int copies = 0;
  auto copy_of = [&](std::size_t index) {
    const fs::path copy = dir / ("copy" + std::to_string(++copies));
    fs::copy(shards[index], copy);
    return copy;
  };
  auto edited = [&](std::size_t index, const std::function<void(nlohmann::ordered_json&)>& edit) {
    const fs::path copy = copy_of(index);
    nlohmann::ordered_json state = nlohmann::ordered_json::parse(read_file(copy / "state.json"));
    edit(state);
    std::ofstream(copy / "state.json") << state.dump();
    return copy.string();
  };

  CHECK_THAT(refused({shards[0], shards[2]}), Contains("shard(s) 1 of 3 are missing"));
  CHECK_THAT(refused({shards[0], shards[1], shards[1], shards[2]}), Contains("shard 1/3 is given twice"));
  const auto two = shard_runs(dir, model, corpus, "two", 2, options);
  CHECK_THAT(refused({shards[0], shards[1], two[1]}), Contains("every shard of one run has the same count"));
  const auto bert = shard_runs(dir, fixture("random_bert.pt"), corpus, "bert", 3, options);
  CHECK_THAT(refused({shards[0], shards[1], bert[2]}), Contains("come from different runs") && Contains("model"));
  const auto seed = shard_runs(dir, model, corpus, "seed", 3, joined(options, {"--seed", "5"}));
  CHECK_THAT(refused({shards[0], seed[1], shards[2]}), Contains("come from different runs") && Contains("seed"));
  const std::string corpus2 = dir.write("corpus2.txt", long_word_corpus(300, 12));
  const auto other = shard_runs(dir, model, corpus2, "corpus2", 3, options);
  CHECK_THAT(refused({shards[0], shards[1], other[2]}), Contains("come from different runs") && Contains("corpus"));

  const fs::path cut = copy_of(1);
  const std::string text = read_file(cut / "state.json");
  std::ofstream(cut / "state.json", std::ios::binary) << text.substr(0, text.size() / 2);
  CHECK_THAT(refused({shards[0], cut.string(), shards[2]}), Contains("state.json") && Contains("not JSON"));
  CHECK_THAT(refused({shards[0], shards[1], edited(2, [](auto& state) { state["version"] = 99; })}),
             Contains("shard state version 99"));
  CHECK_THAT(refused({edited(0, [](auto& state) { state["statistics"]["entropy"]["sums"][0] = {1, 2}; }), shards[1],
                      shards[2]}),
             Contains("statistics.entropy.sums[0] holds 2 heads"));
  CHECK_THAT(refused({edited(0, [](auto& state) { state["shard"]["index"] = 7; }), shards[1], shards[2]}),
             Contains("shard.index is not below shard.count"));
  CHECK_THAT(refused({edited(0, [](auto& state) { state.erase("counts"); }), shards[1], shards[2]}),
             Contains("has no \"counts\""));
  const fs::path short_examples = copy_of(0);
  fs::resize_file(short_examples / "examples.bin", 12);
  CHECK_THAT(refused({short_examples.string(), shards[1], shards[2]}), Contains("examples.bin"));
  fs::create_directory(dir / "empty");
  CHECK_THAT(refused({shards[0], (dir / "empty").string(), shards[2]}), Contains("no state.json"));

  // An output directory that holds the user's files is left as it is, --force or not.
  fs::create_directory(out);
  std::ofstream(out / "notes.txt") << "mine";
  for (const bool force : {false, true}) {
    std::vector<std::string> args = joined(joined({"merge"}, shards), {"-o", out.string(), "-q"});
    if (force) args.push_back("--force");
    CHECK(run_headscan(args).exit_code == 2);
    CHECK(read_file(out / "notes.txt") == "mine");
  }
}

TEST_CASE("bad shard values and options a shard cannot honour are refused", "[shards][e2e]") {
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt", long_word_corpus(20, 13));
  const fs::path out = dir / "shard";
  for (const std::string value : {"3/3", "1/0", "a/b", "1", "-1/2", "0/2000000"}) {
    INFO(value);
    const auto result = run_headscan({fixture("random_gpt2.pt"), corpus, "--shard", value, "-o", out.string(), "-q"});
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Contains("--shard"));
    CHECK_FALSE(fs::exists(out));
  }
  const auto cut = run_headscan(
      {fixture("random_gpt2.pt"), corpus, "--shard", "0/2", "--max-sequences", "5", "-o", out.string(), "-q"});
  CHECK(cut.exit_code == 2);
  CHECK_THAT(cut.err, Contains("--max-sequences"));
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("a merge of 48 heads takes well under a second", "[shards][e2e]") {
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt", long_word_corpus(1500, 17));
  const auto shards = shard_runs(dir, fixture("random_gpt2.pt"), corpus, "fast", 2, {"--parser", "none"});
  const auto start = std::chrono::steady_clock::now();
  merge(dir, shards, "merged", {"--no-html", "--no-plots"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(read_json(dir / "merged" / "heads.json")["run"]["phases"]["merge"].get<double>() < 0.5);
  INFO("the merge command took " << seconds << " s");
  CHECK(seconds < 5);
}

namespace {

struct ReadLine {
  std::string text;
  std::uint64_t chunk;
};

std::vector<ReadLine> read_slice(const std::string& path, headscan::CorpusSlice slice, headscan::SliceUnits units) {
  headscan::TextLineReader reader(path, "expected a test corpus", "file", slice, units);
  std::vector<ReadLine> lines;
  std::string line;
  while (reader.next(line)) lines.push_back({line, reader.chunk()});
  CHECK(reader.lines_read() == lines.size());
  return lines;
}

// Lines of every kind a cut can land in: long and short, empty, blank, CRLF; for blocks, runs of
// blank lines between groups of lines.
std::string mixed_lines(bool blocks) {
  std::string text;
  for (int i = 0; i < 9000; ++i) {
    if (blocks && i % 7 == 6) {
      text += i % 21 == 20 ? "\n \t\n" : "\n";
      continue;
    }
    if (blocks && i % 29 == 0) {
      text += " \r \n";  // not blank: a carriage return inside the line
      continue;
    }
    if (!blocks && i % 13 == 0) {
      text += i % 26 == 0 ? "\n" : "  \r\n";
      continue;
    }
    text += "line " + std::to_string(i) + std::string(static_cast<std::size_t>((i * 7919) % 90), 'x');
    text += i % 5 == 0 ? "\r\n" : "\n";
  }
  return text;
}

}  // namespace

TEST_CASE("the shards of a file read each of its lines once, in whole chunks", "[shards][corpus]") {
  TempDir dir;
  for (const bool blocks : {false, true}) {
    const auto units = blocks ? headscan::SliceUnits::blocks : headscan::SliceUnits::lines;
    const std::string text = mixed_lines(blocks);
    const std::string plain = dir.write(blocks ? "blocks.txt" : "lines.txt", text);
    const std::string packed = dir.write(blocks ? "blocks.txt.gz" : "lines.txt.gz", gzipped(text));
    REQUIRE(fs::file_size(plain) > 5 * headscan::kMinChunkBytes);
    for (const std::string& path : {plain, packed}) {
      const std::vector<ReadLine> whole = read_slice(path, {}, units);
      for (std::uint64_t count : {1, 2, 3, 5, 8, 40}) {
        INFO((blocks ? "blocks" : "lines") << " of " << path << ", " << count << " shards");
        std::vector<std::string> joined_texts;
        std::size_t total = 0;
        for (std::uint64_t index = 0; index < count; ++index) {
          const std::vector<ReadLine> part = read_slice(path, {index, count}, units);
          total += part.size();
          for (const ReadLine& line : part) {
            if (path == packed) CHECK(line.chunk % count == index);
            joined_texts.push_back(line.text);
          }
          if (path == plain) {
            // A contiguous range of whole chunks: chunk ⌊C·I/N⌋ onwards.
            if (!part.empty()) {
              const std::uint64_t chunks = (fs::file_size(plain) + headscan::kMinChunkBytes - 1) / headscan::kMinChunkBytes;
              CHECK(part.front().chunk == chunks * index / count);
            }
          }
        }
        CHECK(total == whole.size());
        if (path == plain) {
          // In shard order, the lines are the file's.
          std::vector<std::string> expected;
          for (const ReadLine& line : whole) expected.push_back(line.text);
          CHECK(joined_texts == expected);
        } else {
          // Every N-th chunk of documents: each line once.
          std::vector<std::string> expected;
          for (const ReadLine& line : whole) expected.push_back(line.text);
          std::sort(expected.begin(), expected.end());
          std::sort(joined_texts.begin(), joined_texts.end());
          CHECK(joined_texts == expected);
        }
      }
    }
  }
}
