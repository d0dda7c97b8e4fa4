// A shard's state.json, as `headscan merge` reads it: accepted states have a shard index below
// their count, a shape with layers and heads, and examples inside their attention file.

#include <string>

#include "analyzer/errors.h"
#include "analyzer/run/shard_state.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const headscan::ShardState state = headscan::parse_shard_state(text, "fuzz/state.json");
    HEADSCAN_FUZZ_CHECK(state.count >= 1 && state.index < state.count);
    HEADSCAN_FUZZ_CHECK(state.layers > 0 && state.heads > 0);
    for (const auto* examples : {&state.examples, &state.probe_examples}) {
      for (const headscan::SavedExample& example : *examples) {
        const std::uint64_t length = example.tokens.size();
        HEADSCAN_FUZZ_CHECK(length > 0 && length <= headscan::kMaxSavedExampleTokens);
        HEADSCAN_FUZZ_CHECK(example.special.size() == length);
        HEADSCAN_FUZZ_CHECK(example.offset + static_cast<std::uint64_t>(state.layers) * state.heads * length * length <=
                            state.example_floats);
      }
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
