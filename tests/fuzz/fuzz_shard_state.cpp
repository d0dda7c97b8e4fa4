// A shard's state.json, as `headscan merge` reads it: accepted states have a shard index below
// their count, a shape with layers and heads, examples end to end inside their attention file,
// finite times, and statistics whose every mean, divided as a classifier's finalize() divides it,
// lies within its possible range (issue 23: merge adds up only what it has checked).

#include <cmath>
#include <string>

#include "analyzer/errors.h"
#include "analyzer/run/shards/shard_state.h"
#include "heads/saved_statistics.h"
#include "heads/statistic_limits.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const headscan::ShardState state = headscan::parse_shard_state(text, "fuzz/state.json");
    HEADSCAN_FUZZ_CHECK(state.count >= 1 && state.index < state.count);
    HEADSCAN_FUZZ_CHECK(state.layers > 0 && state.heads > 0);
    std::uint64_t next_offset = 0;
    for (const auto* examples : {&state.examples, &state.probe_examples}) {
      for (const headscan::SavedExample& example : *examples) {
        const std::uint64_t length = example.tokens.size();
        HEADSCAN_FUZZ_CHECK(length > 0 && length <= headscan::kMaxSavedExampleTokens);
        HEADSCAN_FUZZ_CHECK(example.special.size() == length);
        // No two examples share a float: each begins where the one before ends.
        HEADSCAN_FUZZ_CHECK(example.offset == next_offset);
        next_offset += static_cast<std::uint64_t>(state.layers) * state.heads * length * length;
      }
    }
    HEADSCAN_FUZZ_CHECK(next_offset == state.example_floats);
    HEADSCAN_FUZZ_CHECK(std::isfinite(state.seconds) && state.seconds >= 0);
    for (const auto& [name, seconds] : state.phases) HEADSCAN_FUZZ_CHECK(std::isfinite(seconds) && seconds >= 0);
    HEADSCAN_FUZZ_CHECK(state.counts.sequences <= state.counts.tokens);

    // Every mean an accepted state implies is in [0, high], exactly: no allowance lets a merged
    // mean pass its range (a probability above 1).
    const headscan::StatisticLimits limits = headscan::statistic_limits(state);
    for (const headscan::ImpliedMean& mean : headscan::implied_means(state.statistics, limits)) {
      HEADSCAN_FUZZ_CHECK(mean.count >= 0 && mean.count <= headscan::kMaxSavedCount);
      HEADSCAN_FUZZ_CHECK(mean.count <= limits.corpus_queries.value || mean.count <= limits.probe_queries.value);
      if (mean.count == 0) {
        HEADSCAN_FUZZ_CHECK(mean.sum.units() == 0);
        continue;
      }
      const double value = mean.sum.value() / static_cast<double>(mean.count);
      HEADSCAN_FUZZ_CHECK(value >= 0);
      HEADSCAN_FUZZ_CHECK(value <= mean.high);
    }

    // Two shards of the same state are one shard given twice.
    try {
      headscan::order_shards({state, state});
      HEADSCAN_FUZZ_CHECK(false);
    } catch (const headscan::InputError&) {
    }
  } catch (const headscan::InputError&) {
  }
  return 0;
}
