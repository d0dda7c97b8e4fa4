#pragma once
// What one forward call over the first sequence shows about a model: how many attention layers
// and heads it has, and whether it is causal (all weight above the diagonal is 0) unless
// headscan.json says so.

#include "analyzer/model.h"
#include "analyzer/sequences.h"
#include "heads/classifier.h"

namespace headscan {

// Throws InputError when the forward produces no attention, or layers with different head counts.
ModelShape detect_model_shape(InstrumentedModel& model, const Sequence& first);

}  // namespace headscan
