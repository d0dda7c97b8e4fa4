#include "analyzer/model/eager_attention.h"

#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <ATen/ATen.h>

#include "analyzer/errors.h"
#include "analyzer/model/capture.h"

namespace headscan {

// PyTorch's math backend (aten/src/ATen/native/transformers/attention.cpp,
// _scaled_dot_product_attention_math), without dropout.
at::Tensor eager_attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                           const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                           std::optional<double> scale, bool enable_gqa) {
  TORCH_CHECK(query.dim() >= 2 && key.dim() == query.dim() && value.dim() == query.dim(),
              "scaled_dot_product_attention: query, key and value must have the same rank (≥ 2), got ",
              query.sizes(), ", ", key.sizes(), " and ", value.sizes());
  if (dropout_p != 0.0) {
    throw InputError(fmt::format(
        "the model's scaled_dot_product_attention applies dropout (dropout_p = {}), so its attention "
        "is random; export the model in eval mode (model.eval()), where Hugging Face models pass 0",
        dropout_p));
  }
  at::Tensor keys = key;
  at::Tensor values = value;
  if (enable_gqa && query.dim() >= 3 && key.size(-3) != query.size(-3)) {
    TORCH_CHECK(key.size(-3) > 0 && query.size(-3) % key.size(-3) == 0,
                "scaled_dot_product_attention with enable_gqa: query heads (", query.size(-3),
                ") must be a multiple of key/value heads (", key.size(-3), ")");
    const std::int64_t group = query.size(-3) / key.size(-3);
    keys = keys.repeat_interleave(group, /*dim=*/-3);
    values = values.repeat_interleave(group, /*dim=*/-3);
  }
  const double factor = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  const double root = std::sqrt(factor);
  at::Tensor scores = at::matmul(query * root, keys.transpose(-2, -1) * root);  // [..., H, L, S]
  const double minus_infinity = -std::numeric_limits<double>::infinity();
  if (is_causal) {
    const std::int64_t length = query.size(-2);
    const std::int64_t keys_count = keys.size(-2);
    const at::Tensor visible =
        at::ones({length, keys_count}, query.options().dtype(at::kBool)).tril(/*diagonal=*/0);
    scores = scores.masked_fill(visible.logical_not(), minus_infinity);
  }
  if (attn_mask && attn_mask->defined()) {
    if (attn_mask->scalar_type() == at::kBool) {
      scores = scores.masked_fill(attn_mask->logical_not(), minus_infinity);
    } else {
      scores = scores + *attn_mask;
    }
  }
  at::Tensor probs = at::_safe_softmax(scores, /*dim=*/-1);
  probs = observe_softmax(probs, /*dim=*/-1);
  return at::matmul(probs, values);
}

}  // namespace headscan
