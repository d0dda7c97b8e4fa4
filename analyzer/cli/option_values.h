#pragma once
// Values of command-line options that CLI11 cannot check by itself, parsed without LibTorch so
// that they can be fuzzed (tests/fuzz/fuzz_option_values.cpp).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analyzer/model/model_metadata.h"

namespace headscan {

struct ThresholdOption {
  std::string name;
  double value = 0;
};

// Thresholds that are counts rather than shares of attention: sentences (syntactic_support,
// heads/syntactic.cpp) and tokens (streaming_sink, streaming_window, heads/streaming.cpp); whole
// numbers from 0 to kMaxThresholdCount. Every other threshold is a fraction in [0, 1].
inline const char* const kCountThresholds[] = {"syntactic_support", "streaming_sink", "streaming_window"};
constexpr double kMaxThresholdCount = 1e9;

// Whether `name` is one of kCountThresholds.
bool is_count_threshold(const std::string& name);

// One --threshold value "NAME=VALUE": a name, then a finite decimal number in the threshold's
// range. Throws InputError saying what was expected, what was found and giving an example.
// Whether NAME exists is the registry's check (resolve_thresholds).
ThresholdOption parse_threshold_option(const std::string& text);

// Every --threshold value, by name. Throws InputError when a value is malformed or a name is
// given twice.
std::map<std::string, double> parse_threshold_options(const std::vector<std::string>& texts);

// One --shard value "I/N": the I-th (from 0) of N shards, decimal digits only, 1 <= N <=
// kMaxShards and I < N. Throws InputError saying what was expected and what was found.
struct ShardOption {
  std::uint64_t index = 0;
  std::uint64_t count = 1;
};
constexpr std::uint64_t kMaxShards = 1'000'000;
ShardOption parse_shard_option(const std::string& text);

// The --steps value of `headscan compare`, "0,500,1000": one training step per run, whole numbers
// from 0 to kMaxMetadataStep (as a headscan.json "step"), separated by commas. Throws InputError
// saying what was expected and what was found (for an empty value too: given, it is not left out).
std::vector<std::int64_t> parse_steps_option(const std::string& text);

}  // namespace headscan
