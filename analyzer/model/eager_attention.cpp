#include "analyzer/model/eager_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

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

  // The keys a block of `count` rows from `first_row` can see: under the causal rule (key j hidden
  // from query i when j > i) the first first_row + count, else all S. The scores, the softmax and
  // A·V of a block are computed over those keys only; the probabilities of the others are 0.
  std::int64_t visible_keys(std::int64_t first_row, std::int64_t count) const {
    const std::int64_t keys = scaled_keys.size(-1);
    return is_causal ? std::min(keys, first_row + count) : keys;
  }

  // Scores of one block of query rows `rows` [..., H, Q, E] over the first `keys` keys,
  // [..., H, Q, keys]: under GQA the G query heads of one key/value head are stacked along the
  // rows, [..., Hk, G·Q, E] · [..., Hk, E, keys], so K is never copied per query head.
  at::Tensor scores(const at::Tensor& rows, std::int64_t keys) const {
    const at::Tensor block = rows * root;
    const at::Tensor visible = keys < scaled_keys.size(-1) ? scaled_keys.narrow(-1, 0, keys) : scaled_keys;
    if (group == 1) return at::matmul(block, visible);
    const at::Tensor scores = at::matmul(stacked_rows(block), visible);  // [..., Hk, G·Q, keys]
    return scores.view(resized(resized(scores.sizes(), -3, scores.size(-3) * group), -2, rows.size(-2)));
  }

  // The block's probabilities [..., H, Q, S]: masked scores, softmax over the keys the rows can see,
  // 0 on the others; a row that sees no key is all 0, as _safe_softmax gives it. Without attn_mask
  // every row sees a key (key 0, under the causal rule), so the plain softmax gives those values.
  // With a bool mask the rows that see none are read off the mask (a block of it is H times smaller
  // than the scores) and zeroed after the plain softmax, which left them NaN: _safe_softmax's values
  // without its two passes over the scores. A float mask takes _safe_softmax.
  at::Tensor probabilities(const at::Tensor& rows, std::int64_t first_row) const {
    const std::int64_t count = rows.size(-2);
    const std::int64_t keys = visible_keys(first_row, count);
    const at::Tensor scores = masked(this->scores(rows, keys), first_row);
    at::Tensor probs;
    if (keys == 0 || (mask.defined() && mask.scalar_type() != at::kBool)) {
      probs = at::_safe_softmax(scores, /*dim=*/-1);
    } else {
      probs = at::softmax(scores, /*dim=*/-1);
      if (mask.defined()) {
        at::Tensor seen = block_mask(first_row, count, keys);  // bool, broadcastable to [..., Q, keys]
        if (is_causal && first_row < keys) {
          const at::Tensor ahead = at::ones({count, keys}, seen.options()).triu(/*diagonal=*/first_row + 1);
          seen = seen.logical_and(ahead.logical_not());
        }
        const at::Tensor blind = seen.any(/*dim=*/-1, /*keepdim=*/true).logical_not();
        // On the CPU the check is free and spares the pass; a GPU would wait for it.
        if (!probs.is_cpu() || blind.any().item<bool>()) probs = probs.masked_fill(blind, 0.0);
      }
    }
    const std::int64_t hidden = scaled_keys.size(-1) - keys;
    return hidden > 0 ? at::constant_pad_nd(probs, {0, hidden}, 0.0) : probs;
  }

  // attn_mask's rows of a block of `count` rows from `first_row` and its first `keys` columns (dims
  // of size 1 stay broadcast).
  at::Tensor block_mask(std::int64_t first_row, std::int64_t count, std::int64_t keys) const {
    at::Tensor block = mask;
    if (mask.dim() >= 2 && mask.size(-2) != 1) block = block.narrow(-2, first_row, count);
    if (mask.dim() >= 1 && mask.size(-1) != 1 && keys < mask.size(-1)) block = block.narrow(-1, 0, keys);
    return block;
  }

  // A·V of one block of probabilities [..., H, Q, S] from `first_row`: [..., H, Q, Ev]. With
  // `causal_zeros` (the probabilities are probabilities() as it gives them, or scaled: 0 on every key
  // the rows cannot see) only the visible keys' values are read.
  at::Tensor outputs(const at::Tensor& probs, std::int64_t first_row, bool causal_zeros) const {
    const std::int64_t rows = probs.size(-2);
    const std::int64_t keys = causal_zeros ? visible_keys(first_row, rows) : probs.size(-1);
    const bool narrowed = keys < probs.size(-1);
    const at::Tensor weights = narrowed ? probs.narrow(-1, 0, keys) : probs;
    const at::Tensor read = narrowed ? values.narrow(-2, 0, keys) : values;
    if (group == 1) return at::matmul(weights, read);
    const at::Tensor out = at::matmul(stacked_rows(weights), read);  // [..., Hk, G·Q, Ev]
    return out.view(resized(resized(out.sizes(), -3, out.size(-3) * group), -2, rows));
  }

  // [..., H, Q, X] with H = Hk·G as [..., Hk, G·Q, X] (a copy when the rows are not contiguous).
  at::Tensor stacked_rows(const at::Tensor& rows) const {
    const std::int64_t heads = rows.size(-3);
    const at::Tensor grouped = rows.unflatten(-3, {heads / group, group});  // [..., Hk, G, Q, X]
    return grouped.reshape(resized(resized(rows.sizes(), -3, heads / group), -2, group * rows.size(-2)));
  }

  // The block's scores over its visible keys (the first scores.size(-1)) masked as the math backend
  // masks them: −inf above the causal diagonal (key j hidden from query i when j > i, positions
  // absolute: only the keys from first_row on can be), then attn_mask's rows and visible columns of
  // the block (bool: −inf where false; float: added), in place when the mask broadcasts to the block.
  at::Tensor masked(at::Tensor scores, std::int64_t first_row) const {
    constexpr double minus_infinity = -std::numeric_limits<double>::infinity();
    const std::int64_t rows = scores.size(-2);
    const std::int64_t keys = scores.size(-1);
    if (is_causal && first_row < keys) {
      const at::Tensor hidden = at::ones({rows, keys - first_row}, scores.options().dtype(at::kBool))
                                    .triu(/*diagonal=*/1);
      scores.narrow(-1, first_row, keys - first_row).masked_fill_(hidden, minus_infinity);
    }
    if (!mask.defined()) return scores;
    const at::Tensor block_mask = this->block_mask(first_row, rows, keys);
    const bool in_place = at::infer_size(block_mask.sizes(), scores.sizes()) == scores.sizes();
    if (block_mask.scalar_type() == at::kBool) {
      const at::Tensor hidden = block_mask.logical_not();
      return in_place ? scores.masked_fill_(hidden, minus_infinity) : scores.masked_fill(hidden, minus_infinity);
    }
    return in_place ? scores.add_(block_mask) : scores + block_mask;
  }
};

// The output [..., H, L, Ev] of `call` with its blocks' probabilities passed through `block`
// (probabilities [..., H, Q, S], first row) -> probabilities A·V is taken of.
// `causal_zeros`: `block` keeps 0 where the probabilities are 0 (AttentionCall::outputs).
template <typename Block>
at::Tensor blocked_output(const AttentionCall& call, std::int64_t rows, bool causal_zeros, const Block& block) {
  const std::int64_t length = call.query.size(-2);
  if (length == 0) return call.outputs(call.probabilities(call.query, 0), 0, false);  // no rows: an empty output
  at::Tensor output;  // allocated with the first block when there are several
  for (std::int64_t first_row = 0; first_row < length; first_row += rows) {
    const std::int64_t count = std::min(rows, length - first_row);
    const at::Tensor probs = block(call.probabilities(call.query.narrow(-2, first_row, count), first_row), first_row);
    at::Tensor block_output = call.outputs(probs, first_row, causal_zeros);
    if (count == length) return block_output;
    if (!output.defined()) output = at::empty(resized(block_output.sizes(), -2, length), block_output.options());
    output.narrow(-2, first_row, count).copy_(block_output);
  }
  return output;
}

// The attention of one call differentiated block by block (gradient checkpointing per block): the
// forward keeps q, k, v and the layer's head scale, not the probabilities, and the backward
// recomputes each block's probabilities and differentiates that block alone. Autograd through the
// plain blocks would keep every block of every layer until the backward, T² per layer again.
class RecomputedAttention : public torch::autograd::Function<RecomputedAttention> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* context, const at::Tensor& query,
                            const at::Tensor& key, const at::Tensor& value, const at::Tensor& scale,
                            const AttentionCall* call, AttentionBlocks* blocks) {
    const std::int64_t batch = blocks->batch();
    const bool scaled = scale.numel() > 0;  // [B, H], or empty when the layer has no head scale
    at::Tensor output = blocked_output(*call, blocks->rows(), /*causal_zeros=*/true, [&](at::Tensor probs,
                                                                                          std::int64_t first_row) {
      blocks->deliver(probs, first_row);
      return scaled ? scale_heads(probs, batch, scale) : probs;
    });
    context->save_for_backward({query, key, value, scale});
    context->saved_data["mask"] = call->mask;
    context->saved_data["root"] = call->root;
    context->saved_data["group"] = call->group;
    context->saved_data["is_causal"] = call->is_causal;
    context->saved_data["rows"] = blocks->rows();
    context->saved_data["batch"] = batch;
    return output;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* context,
                                                 torch::autograd::variable_list gradients) {
    const torch::autograd::variable_list saved = context->get_saved_variables();
    const at::Tensor& query = saved[0];
    const bool wants_query = context->needs_input_grad(0);
    const bool wants_key = context->needs_input_grad(1);
    const bool wants_value = context->needs_input_grad(2);
    const bool wants_scale = context->needs_input_grad(3);
    AttentionCall call;
    const at::IValue& mask = context->saved_data["mask"];
    if (mask.isTensor()) call.mask = mask.toTensor();
    call.root = context->saved_data["root"].toDouble();
    call.group = context->saved_data["group"].toInt();
    call.is_causal = context->saved_data["is_causal"].toBool();
    const std::int64_t rows = context->saved_data["rows"].toInt();
    const std::int64_t batch = context->saved_data["batch"].toInt();

    const at::AutoGradMode recompute(true);
    // (k·√s) as a leaf, so each block's gradient is taken with respect to it alone.
    const at::Tensor scaled_keys = (saved[1].detach() * call.root).requires_grad_(wants_key);
    call.scaled_keys = scaled_keys.transpose(-2, -1);
    call.values = saved[2].detach().requires_grad_(wants_value);
    const at::Tensor scale = saved[3].numel() > 0 ? saved[3].detach().requires_grad_(wants_scale) : at::Tensor();
    at::Tensor query_gradient = wants_query ? at::empty_like(query) : at::Tensor();
    at::Tensor key_gradient, value_gradient, scale_gradient;
    const auto add = [](at::Tensor& sum, const at::Tensor& term) {
      if (!term.defined()) return;
      sum = sum.defined() ? sum.add_(term) : term;
    };
    const std::int64_t length = query.size(-2);
    for (std::int64_t first_row = 0; first_row < length; first_row += rows) {
      const std::int64_t count = std::min(rows, length - first_row);
      const at::Tensor block = query.narrow(-2, first_row, count).detach().requires_grad_(wants_query);
      at::Tensor probs = call.probabilities(block, first_row);
      if (scale.defined()) probs = scale_heads(probs, batch, scale);
      const at::Tensor output = call.outputs(probs, first_row, /*causal_zeros=*/true);
      std::vector<at::Tensor> inputs;
      if (wants_query) inputs.push_back(block);
      if (wants_key) inputs.push_back(scaled_keys);
      if (wants_value) inputs.push_back(call.values);
      if (wants_scale && scale.defined()) inputs.push_back(scale);
      const torch::autograd::variable_list parts = torch::autograd::grad(
          {output}, inputs, {gradients[0].narrow(-2, first_row, count)}, /*retain_graph=*/false,
          /*create_graph=*/false, /*allow_unused=*/true);
      std::size_t next = 0;
      if (wants_query) {
        const at::Tensor& part = parts[next++];
        if (part.defined()) {
          query_gradient.narrow(-2, first_row, count).copy_(part);
        } else {
          query_gradient.narrow(-2, first_row, count).zero_();
        }
      }
      if (wants_key) add(key_gradient, parts[next++]);
      if (wants_value) add(value_gradient, parts[next++]);
      if (wants_scale && scale.defined()) add(scale_gradient, parts[next++]);
    }
    if (key_gradient.defined()) key_gradient = key_gradient * call.root;
    return {query_gradient, key_gradient, value_gradient, scale_gradient, at::Tensor(), at::Tensor()};
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
  // A backward pass through several blocks recomputes them one at a time (RecomputedAttention),
  // unless an edit, which only the plain blocks apply, is in place.
  const at::Tensor head_scale = blocks.head_scale();
  const bool differentiated =
      at::GradMode::is_enabled() && (query.requires_grad() || key.requires_grad() || value.requires_grad() ||
                                     (head_scale.defined() && head_scale.requires_grad()));
  if (differentiated && rows < length && !blocks.edits() && !(call.mask.defined() && call.mask.requires_grad())) {
    // Function::apply takes defined tensors only: no scale is an empty one.
    return RecomputedAttention::apply(query, key, value,
                                      head_scale.defined() ? head_scale : at::empty({0}, query.options()), &call,
                                      &blocks);
  }
  // Head scales keep a probability of 0 at 0; an edit may not.
  return blocked_output(call, rows, /*causal_zeros=*/!blocks.edits(), [&](const at::Tensor& probs, std::int64_t first_row) {
    return blocks.observe(probs, first_row);
  });
}

}  // namespace headscan
