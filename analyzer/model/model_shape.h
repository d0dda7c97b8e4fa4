#pragma once
// What one forward call over the first sequence shows about a model: how many attention layers
// and heads it has, and whether it is causal (all weight above the diagonal is 0) unless
// headscan.json says so.

#include <cstdint>
#include <optional>
#include <vector>

namespace at {
class Tensor;
}

namespace headscan {

class InstrumentedModel;

struct ModelShape {
  int layers = 0;
  int heads = 0;  // query heads per layer
  bool causal = true;
  // The last dimension of the output when it is logits [B, T, V] (alone or first in a tuple); 0
  // when the model returns something else.
  std::int64_t logits_width = 0;
  // headscan.json's "logits": whether the output is logits, as the exporter told from the model's
  // head; absent, the width is compared with the tokenizer's vocabulary (run/model_output.h).
  std::optional<bool> declared_logits;
};

// Runs the model once on a prefix of `ids` (the first sequence's token ids). Throws InputError
// when the forward produces no attention, or layers with different head counts.
ModelShape detect_model_shape(InstrumentedModel& model, const std::vector<std::int64_t>& ids);

// Throws InputError, naming the layer, when a row block of attention [B, H, Q, T] (rows first_row
// ..) holds NaN or infinite weights in a row of a real query (`valid` [B, T] bool, 1 for real tokens;
// null: every row): softmax gives neither, so the model's weights or its computation are broken.
// Rows of padding may hold NaN when a mask hides every key from them, and are not checked.
void require_finite_attention(int layer, const at::Tensor& attention, const at::Tensor* valid,
                              std::int64_t first_row = 0);
// The same check in two halves, so that a run can wait for the device once per batch: a 0-dim bool
// tensor on the attention's device, true when a real query's row is broken; and the error.
at::Tensor nonfinite_attention(const at::Tensor& attention, const at::Tensor* valid, std::int64_t first_row = 0);
[[noreturn]] void report_nonfinite_attention(int layer);

}  // namespace headscan
