#pragma once
// What one forward call over the first sequence shows about a model: how many attention layers
// and heads it has, and whether it is causal (all weight above the diagonal is 0) unless
// headscan.json says so.

#include <cstdint>
#include <vector>

namespace headscan {

class InstrumentedModel;

struct ModelShape {
  int layers = 0;
  int heads = 0;  // query heads per layer
  bool causal = true;
};

// Runs the model once on a prefix of `ids` (the first sequence's token ids). Throws InputError
// when the forward produces no attention, or layers with different head counts.
ModelShape detect_model_shape(InstrumentedModel& model, const std::vector<std::int64_t>& ids);

}  // namespace headscan
