#pragma once
// Values of command-line options that CLI11 cannot check by itself, parsed without LibTorch so
// that they can be fuzzed (tests/fuzz/fuzz_option_values.cpp).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analyzer/model/model_metadata.h"
#include "analyzer/run/sequences/probe_budget.h"

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

// The smallest value of a count threshold: 1 for streaming_window (the window holds the query
// itself), else 0. --sink and --window take the range of --threshold streaming_sink and
// streaming_window: count_threshold_minimum(name) to kMaxThresholdCount.
double count_threshold_minimum(const std::string& name);

// --sink or --window (`option`), which sets the threshold `name` (streaming_sink,
// streaming_window), into `thresholds` (--threshold's). Throws InputError when --threshold gave
// that threshold another value: the cache would have two sizes.
void set_streaming_size(std::map<std::string, double>& thresholds, const std::string& option, const std::string& name,
                        std::int64_t value);

// The --seed value: a whole number from 0 to 2^64 - 1, in decimal digits. Throws InputError saying
// what was expected and what was found (a sign, a fraction, a number past 2^64 - 1).
std::uint64_t parse_seed_option(const std::string& text);

// The --attention-block value: "auto" (0: planned) or the most query rows a block may have, a
// whole number from 1 to 2^31. Throws InputError saying what was expected.
std::int64_t parse_attention_block_option(const std::string& text);

// The --needle-lengths value: probe lengths in tokens, whole numbers from 1 to 2^20 separated by
// commas, returned ascending and distinct. Throws InputError quoting the item that is not one;
// the lengths are checked against max_length once it is known (check_needle_lengths).
std::vector<std::int64_t> parse_needle_lengths_option(const std::string& text);

// The --probes value: "default", "none" or N (for both kinds), or per kind
// "induction=VALUE,needles=VALUE" (either or both; the other keeps its default), each VALUE
// default, none or N, N a whole number from 1 to kMaxProbeCount. Throws InputError saying what was
// expected and what was found (an unknown kind, a kind given twice, a value that is not one).
ProbeBudget parse_probes_option(const std::string& text);

// Refuses a text given where a path belongs (`what`: "the model path", "--idf") that no path can
// be, before anything tries to open it: longer than PATH_MAX bytes, or with a name longer than
// NAME_MAX. The message quotes only its start (shown_path). Throws InputError.
void check_path_option(const std::string& what, const std::string& path);

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
