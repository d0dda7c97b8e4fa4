#include "analyzer/model/eager_attention.h"

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>

#include "analyzer/errors.h"
#include "analyzer/model/capture.h"

namespace headscan {
namespace {

// `sizes` with dimension `dim` (negative: from the end) replaced by `size`.
std::vector<std::int64_t> resized(at::IntArrayRef sizes, std::int64_t dim, std::int64_t size) {
  std::vector<std::int64_t> shape = sizes.vec();
  shape[static_cast<std::size_t>(static_cast<std::int64_t>(shape.size()) + dim)] = size;
  return shape;
}

// One attention call, its operands prepared once for all blocks of query rows.
struct AttentionCall {
  at::Tensor query;         // [..., H, L, E]
  at::Tensor scaled_keys;   // (k·√s)ᵀ, [..., Hk, E, S]
  at::Tensor values;        // [..., Hk, S, Ev]
  at::Tensor mask;          // undefined, or broadcastable to [..., H, L, S]
  double root = 1.0;        // √s
  std::int64_t group = 1;   // query heads per key/value head under enable_gqa, else 1
  bool is_causal = false;

  // Scores of queries first_row .. first_row + rows − 1, [..., H, Q, S]: under GQA the G query
  // heads of one key/value head are stacked along the rows, [..., Hk, G·Q, E] · [..., Hk, E, S],
  // so K is never copied per query head.
  at::Tensor scores(std::int64_t first_row, std::int64_t rows) const {
    const at::Tensor block = query.narrow(-2, first_row, rows) * root;
    if (group == 1) return at::matmul(block, scaled_keys);
    const at::Tensor stacked = stacked_rows(block);
    const at::Tensor scores = at::matmul(stacked, scaled_keys);  // [..., Hk, G·Q, S]
    return scores.view(resized(resized(scores.sizes(), -3, scores.size(-3) * group), -2, rows));
  }

  // A·V of one block of probabilities [..., H, Q, S]: [..., H, Q, Ev].
  at::Tensor outputs(const at::Tensor& probs) const {
    const std::int64_t rows = probs.size(-2);
    if (group == 1) return at::matmul(probs, values);
    const at::Tensor out = at::matmul(stacked_rows(probs), values);  // [..., Hk, G·Q, Ev]
    return out.view(resized(resized(out.sizes(), -3, out.size(-3) * group), -2, rows));
  }

  // [..., H, Q, X] with H = Hk·G as [..., Hk, G·Q, X] (a copy when the rows are not contiguous).
  at::Tensor stacked_rows(const at::Tensor& rows) const {
    const std::int64_t heads = rows.size(-3);
    const at::Tensor grouped = rows.unflatten(-3, {heads / group, group});  // [..., Hk, G, Q, X]
    return grouped.reshape(resized(resized(rows.sizes(), -3, heads / group), -2, group * rows.size(-2)));
  }

  // The block's scores masked as the math backend masks them: −inf above the causal diagonal (key j
  // hidden from query i when j > i, positions absolute), then attn_mask's rows of the block (bool:
  // −inf where false; float: added), in place when the mask broadcasts to the block's shape.
  at::Tensor masked(at::Tensor scores, std::int64_t first_row) const {
    constexpr double minus_infinity = -std::numeric_limits<double>::infinity();
    const std::int64_t rows = scores.size(-2);
    if (is_causal) {
      const at::Tensor hidden = at::ones({rows, scores.size(-1)}, scores.options().dtype(at::kBool))
                                    .triu(/*diagonal=*/first_row + 1);
      scores.masked_fill_(hidden, minus_infinity);
    }
    if (!mask.defined()) return scores;
    at::Tensor block_mask = mask;
    if (mask.dim() >= 2 && mask.size(-2) != 1) block_mask = mask.narrow(-2, first_row, rows);
    const bool in_place = at::infer_size(block_mask.sizes(), scores.sizes()) == scores.sizes();
    if (block_mask.scalar_type() == at::kBool) {
      const at::Tensor hidden = block_mask.logical_not();
      return in_place ? scores.masked_fill_(hidden, minus_infinity) : scores.masked_fill(hidden, minus_infinity);
    }
    return in_place ? scores.add_(block_mask) : scores + block_mask;
  }
};

}  // namespace

// PyTorch's math backend (aten/src/ATen/native/transformers/attention.cpp,
// _scaled_dot_product_attention_math), without dropout, in blocks of query rows.
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
  AttentionCall call;
  call.query = query;
  call.values = value;
  call.is_causal = is_causal;
  if (enable_gqa && query.dim() >= 3 && key.size(-3) != query.size(-3)) {
    TORCH_CHECK(key.size(-3) > 0 && query.size(-3) % key.size(-3) == 0,
                "scaled_dot_product_attention with enable_gqa: query heads (", query.size(-3),
                ") must be a multiple of key/value heads (", key.size(-3), ")");
    TORCH_CHECK(value.size(-3) == key.size(-3), "scaled_dot_product_attention with enable_gqa: key and value ",
                "must have as many heads, got ", key.sizes(), " and ", value.sizes());
    call.group = query.size(-3) / key.size(-3);
  }
  const double factor = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  call.root = std::sqrt(factor);
  call.scaled_keys = (key * call.root).transpose(-2, -1);
  const std::int64_t length = query.size(-2);
  if (attn_mask && attn_mask->defined()) {
    call.mask = *attn_mask;
    TORCH_CHECK(call.mask.dim() < 2 || call.mask.size(-2) == 1 || call.mask.size(-2) == length,
                "scaled_dot_product_attention: attn_mask ", call.mask.sizes(), " does not broadcast to ",
                length, " query rows");
  }

  // The probabilities' shape, [..., H, L, S] (the operands' batch dimensions and the mask's
  // broadcast), for the block plan and the capture.
  std::vector<std::int64_t> shape;
  if (call.group > 1) {
    shape = at::infer_size(query.sizes().slice(0, query.dim() - 3), key.sizes().slice(0, key.dim() - 3));
    shape.push_back(query.size(-3));
  } else {
    shape = at::infer_size(query.sizes().slice(0, query.dim() - 2), key.sizes().slice(0, key.dim() - 2));
  }
  shape.push_back(length);
  shape.push_back(key.size(-2));
  if (call.mask.defined()) shape = at::infer_size(shape, call.mask.sizes());
  AttentionBlocks blocks(shape, at::elementSize(at::result_type(query, key)), query.device());
  const std::int64_t rows = blocks.rows();

  at::Tensor output;  // [..., H, L, Ev], allocated with the first block when there are several
  for (std::int64_t first_row = 0; first_row < length; first_row += rows) {
    const std::int64_t count = std::min(rows, length - first_row);
    at::Tensor probs = at::_safe_softmax(call.masked(call.scores(first_row, count), first_row), /*dim=*/-1);
    probs = blocks.observe(probs, first_row);
    at::Tensor block_output = call.outputs(probs);
    if (count == length) return block_output;
    if (!output.defined()) output = at::empty(resized(block_output.sizes(), -2, length), block_output.options());
    output.narrow(-2, first_row, count).copy_(block_output);
  }
  return output;
}

}  // namespace headscan
