#pragma once
// The state a shard run (--shard I/N) leaves in its directory for `headscan merge`: state.json,
// and examples.bin with the attention of its example sequences. Reading and checking them needs no
// LibTorch, so the reader is fuzzed (tests/fuzz/fuzz_shard_state.cpp).
//
// A state is checked as a whole when it is read, before merge adds anything: every name is one
// this reader knows, the headscan version is this one wherever it is written, counts are whole
// numbers, every statistic's counts and means are within what the shard's counts allow
// (heads/statistic_limits.h), times are finite, and examples.bin holds the examples end to end,
// every weight from 0 to 1.
//
// state.json: {"format": "headscan-shard", "version": 1, "headscan_version",
//   "shard": {"index", "count", "slice"},       the part of the corpus read (CorpusSlice)
//   "agree": {...},                              what every shard of one run must share: model and
//                                                tokenizer fingerprints, options, idf source, shape
//   "shape": {"layers", "heads", "causal"},
//   "counts": {"lines", "documents", ...},       of the shard's slice
//   "statistics": {...},                         every classifier's save()
//   "document": {...},                           the shard's own heads.json (its slice's scores):
//                                                model, probes and ablation sections come from it
//   "warnings": [...],                           of the setup and passes (not of the counts)
//   "examples": [...], "probe_examples": [...],  example sequences, attention in examples.bin
//   "example_floats", "seconds", "phases"}

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/model/model_layers.h"
#include "heads/statistic_limits.h"

namespace headscan {

constexpr const char* kShardStateFormat = "headscan-shard";
constexpr int kShardStateVersion = 1;
constexpr const char* kShardStateFile = "state.json";
constexpr const char* kShardExamplesFile = "examples.bin";
// The longest example sequence a state holds (ExampleSequence::kMaxExampleTokens), and the most
// examples of each list (ExampleSequence::kMaxExamples).
constexpr std::size_t kMaxSavedExampleTokens = 64;
constexpr std::size_t kMaxSavedExamples = 8;

// Counts of a shard's slice of the corpus: they add up to the whole corpus's.
struct ShardCounts {
  std::int64_t lines = 0;
  std::int64_t documents = 0;
  std::int64_t sequences = 0;
  std::int64_t tokens = 0;
  std::int64_t lines_with_invalid_utf8 = 0;
  std::int64_t invalid_utf8_replacements = 0;
  std::int64_t sentences = 0;
  std::int64_t parsed_sentences = 0;

  void add(const ShardCounts& other);
};

// An example sequence whose attention ([layers][heads][T][T] float32) is in examples.bin.
struct SavedExample {
  // Its place in the corpus: examples of all shards sorted by key are in corpus order.
  std::pair<std::uint64_t, std::uint64_t> key;
  std::string source;
  std::vector<std::string> tokens;
  std::vector<bool> special;
  std::uint64_t offset = 0;  // index of its first float in examples.bin
};

struct ShardState {
  std::string directory;
  std::uint64_t index = 0;
  std::uint64_t count = 1;
  std::string slice;              // "whole", "bytes" or "documents"
  nlohmann::ordered_json agree;   // must be equal in every shard
  int layers = 0;
  int heads = 0;
  bool causal = true;
  std::int64_t max_length = 0;  // agree.max_length: tokens of the longest window
  std::int64_t probes = 0;      // document.probes.count: probe sequences (shard 0 runs them)
  std::int64_t needles = 0;     // document.retrieval.probes: needle probes (shard 0 runs them)
  ShardCounts counts;
  nlohmann::json statistics;
  nlohmann::ordered_json document;
  // document.model.layers: the model's own numbering of its layers, when the shard knew it.
  LayerNumbering layer_numbering;
  std::vector<std::string> warnings;
  std::vector<SavedExample> examples;
  std::vector<SavedExample> probe_examples;
  std::uint64_t example_floats = 0;
  double seconds = 0;
  std::vector<std::pair<std::string, double>> phases;
};

nlohmann::ordered_json counts_json(const ShardCounts& counts);
nlohmann::ordered_json saved_example_json(const SavedExample& example);

// What the shard could have counted, for its statistics: its tokens, sequences, window, probes.
StatisticLimits statistic_limits(const ShardState& state);

// Parses and checks state.json's text; `where` names it in messages. Throws InputError naming the
// field (a JSON path: "statistics.confidence.counts[0]") and the rule it breaks when the text is
// not a whole, consistent shard state of this headscan version.
ShardState parse_shard_state(const std::string& text, const std::string& where);

// Reads DIR/state.json and checks that DIR/examples.bin holds example_floats floats, each a
// finite attention weight from 0 to 1.
ShardState read_shard_state(const std::string& directory);

// Checks that the shards make one run: the same count, every index exactly once, equal "agree"
// sections. Throws InputError naming the shards and the difference. Returns them by index.
std::vector<ShardState> order_shards(std::vector<ShardState> shards);

}  // namespace headscan
