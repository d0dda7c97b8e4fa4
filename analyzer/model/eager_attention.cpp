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

// The keys [first, end) a block of rows computes scores over.
struct KeyRange {
  std::int64_t first = 0;
  std::int64_t end = 0;
  std::int64_t size() const { return end - first; }
};

// One attention call, its operands prepared once for all blocks of query rows.
struct AttentionCall {
  at::Tensor query;         // [..., H, L, E]
  at::Tensor scaled_keys;   // (k·√s)ᵀ, [..., Hk, E, S]
  at::Tensor values;        // [..., Hk, S, Ev]
  at::Tensor mask;          // undefined, or broadcastable to [..., H, L, S]
  double root = 1.0;        // √s
  std::int64_t group = 1;   // query heads per key/value head under enable_gqa, else 1
  bool is_causal = false;
  AttentionRule rule;       // windows, chunks, soft-capping, sinks (eager_attention.h)
  at::Tensor left_padding;  // under chunks with a mask: the leading hidden keys, [..., 1, 1] int64

  // The keys a block of `count` rows from `first_row` can see, a range of the S keys: from the
  // first key of the earliest row's window or chunk (row r's chunk starts after r − chunk, whatever
  // the padding), to the last row under the causal rule (key j hidden from query i when j > i) or
  // its right window or chunk. The scores, the softmax and A·V of a block are computed over those
  // keys only; the probabilities of the others are 0.
  KeyRange visible_keys(std::int64_t first_row, std::int64_t count) const {
    const std::int64_t keys = scaled_keys.size(-1);
    const std::int64_t last_row = first_row + count - 1;
    KeyRange range{0, keys};
    if (rule.window_left >= 0) range.first = std::max(range.first, first_row - rule.window_left);
    if (rule.chunk > 0) range.first = std::max(range.first, first_row - (rule.chunk - 1));
    if (is_causal) range.end = std::min(range.end, last_row + 1);
    if (rule.window_right >= 0) range.end = std::min(range.end, last_row + rule.window_right + 1);
    if (rule.chunk > 0) range.end = std::min(range.end, last_row + rule.chunk);
    range.first = std::min(range.first, keys);
    range.end = std::max(range.end, range.first);
    return range;
  }

  // Scores of one block of query rows `rows` [..., H, Q, E] over the keys `range`,
  // [..., H, Q, range.size()]: under GQA the G query heads of one key/value head are stacked along
  // the rows, [..., Hk, G·Q, E] · [..., Hk, E, keys], so K is never copied per query head.
  // Soft-capped when the rule says so.
  at::Tensor scores(const at::Tensor& rows, KeyRange range) const {
    const at::Tensor block = rows * root;
    const at::Tensor visible = range.size() < scaled_keys.size(-1)
                                   ? scaled_keys.narrow(-1, range.first, range.size())
                                   : scaled_keys;
    at::Tensor scores;
    if (group == 1) {
      scores = at::matmul(block, visible);
    } else {
      scores = at::matmul(stacked_rows(block), visible);  // [..., Hk, G·Q, keys]
      scores = scores.view(resized(resized(scores.sizes(), -3, scores.size(-3) * group), -2, rows.size(-2)));
    }
    if (rule.softcap) scores = at::tanh(scores / *rule.softcap) * *rule.softcap;
    return scores;
  }

  // The block's probabilities [..., H, Q, S]: masked scores, softmax over the keys the rows can see,
  // 0 on the others; a row that sees no key is all 0, as _safe_softmax gives it. Without attn_mask
  // and without windows every row sees a key (key 0, under the causal rule), so the plain softmax
  // gives those values. Otherwise the rows that see none are read off the rule and the mask (a
  // block of them is H times smaller than the scores) and zeroed after the plain softmax, which
  // left them NaN: _safe_softmax's values without its two passes over the scores. A float mask
  // takes _safe_softmax. With sinks, each head's sink is one more logit of the softmax, dropped
  // after it (a row that sees no key gives all to its sink: 0 on the keys).
  at::Tensor probabilities(const at::Tensor& rows, std::int64_t first_row) const {
    const std::int64_t count = rows.size(-2);
    const KeyRange range = visible_keys(first_row, count);
    const at::Tensor scores = masked(this->scores(rows, range), first_row, range);
    at::Tensor probs;
    if (rule.sinks.defined()) {
      const std::int64_t heads = scores.size(-3);
      TORCH_CHECK(rule.sinks.dim() == 1 && rule.sinks.size(0) == heads, "attention sinks must be [", heads,
                  "] (one per query head), got ", rule.sinks.sizes());
      const at::Tensor sink = rule.sinks.to(scores.scalar_type()).view({heads, 1, 1}).expand(
          resized(scores.sizes(), -1, 1));
      probs = at::softmax(at::cat({scores, sink}, /*dim=*/-1), /*dim=*/-1).narrow(-1, 0, range.size());
    } else if (range.size() == 0 || (mask.defined() && mask.scalar_type() != at::kBool)) {
      probs = at::_safe_softmax(scores, /*dim=*/-1);
    } else {
      probs = at::softmax(scores, /*dim=*/-1);
      if (mask.defined() || windowed()) {
        at::Tensor seen = mask.defined() ? block_mask(first_row, count, range) : at::Tensor();
        const at::Tensor hidden = hidden_keys(first_row, count, range);
        if (hidden.defined()) seen = seen.defined() ? seen.logical_and(hidden.logical_not()) : hidden.logical_not();
        const at::Tensor blind = seen.any(/*dim=*/-1, /*keepdim=*/true).logical_not();
        // On the CPU the check is free and spares the pass; a GPU would wait for it.
        if (!probs.is_cpu() || blind.any().item<bool>()) probs = probs.masked_fill(blind, 0.0);
      }
    }
    const std::int64_t before = range.first;
    const std::int64_t after = scaled_keys.size(-1) - range.end;
    if (before > 0 || after > 0) return at::constant_pad_nd(probs, {before, after}, 0.0);
    return rule.sinks.defined() ? probs.contiguous() : probs;
  }

  // Whether a window or chunk bounds the keys (beyond the causal rule).
  bool windowed() const { return rule.window_left >= 0 || rule.window_right >= 0 || rule.chunk > 0; }

  // attn_mask's rows of a block of `count` rows from `first_row` and its columns `range` (dims of
  // size 1 stay broadcast).
  at::Tensor block_mask(std::int64_t first_row, std::int64_t count, KeyRange range) const {
    at::Tensor block = mask;
    if (mask.dim() >= 2 && mask.size(-2) != 1) block = block.narrow(-2, first_row, count);
    if (mask.dim() >= 1 && mask.size(-1) != 1 && range.size() < mask.size(-1)) {
      block = block.narrow(-1, range.first, range.size());
    }
    return block;
  }

  // The keys of `range` the rule hides from a block of `count` rows from `first_row`: bool
  // [Q, keys] (true: hidden), [..., Q, keys] when chunks depend on the sequences' left padding;
  // undefined when the rule hides none (no causal rule, window or chunk).
  at::Tensor hidden_keys(std::int64_t first_row, std::int64_t count, KeyRange range) const {
    if (!is_causal && !windowed()) return at::Tensor();
    const at::TensorOptions positions = at::TensorOptions().dtype(at::kLong).device(scaled_keys.device());
    const at::Tensor row = at::arange(first_row, first_row + count, positions).unsqueeze(-1);  // [Q, 1]
    const at::Tensor key = at::arange(range.first, range.end, positions).unsqueeze(0);          // [1, keys]
    at::Tensor hidden;
    const auto hide = [&hidden](const at::Tensor& more) { hidden = hidden.defined() ? hidden.logical_or(more) : more; };
    if (is_causal) hide(key > row);
    if (rule.window_left >= 0) hide(key < row - rule.window_left);
    if (rule.window_right >= 0) hide(key > row + rule.window_right);
    if (rule.chunk > 0) {
      const at::Tensor key_at = left_padding.defined() ? key - left_padding : key;
      const at::Tensor row_at = left_padding.defined() ? row - left_padding : row;
      hide(at::div(key_at, rule.chunk, "floor").ne(at::div(row_at, rule.chunk, "floor")));
    }
    return hidden;
  }

  // A·V of one block of probabilities [..., H, Q, S] from `first_row`: [..., H, Q, Ev]. With
  // `causal_zeros` (the probabilities are probabilities() as it gives them, or scaled: 0 on every key
  // the rows cannot see) only the visible keys' values are read.
  at::Tensor outputs(const at::Tensor& probs, std::int64_t first_row, bool causal_zeros) const {
    const std::int64_t rows = probs.size(-2);
    const KeyRange range = causal_zeros ? visible_keys(first_row, rows) : KeyRange{0, probs.size(-1)};
    const bool narrowed = range.size() < probs.size(-1);
    const at::Tensor weights = narrowed ? probs.narrow(-1, range.first, range.size()) : probs;
    const at::Tensor read = narrowed ? values.narrow(-2, range.first, range.size()) : values;
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

  // The block's scores over its visible keys `range` masked as the math backend masks them: −inf
  // where the rule hides a key (hidden_keys: the causal rule, positions absolute, the windows and
  // chunks), then attn_mask's rows and visible columns of the block (bool: −inf where false; float:
  // added), in place when the mask broadcasts to the block.
  at::Tensor masked(at::Tensor scores, std::int64_t first_row, KeyRange range) const {
    constexpr double minus_infinity = -std::numeric_limits<double>::infinity();
    const std::int64_t rows = scores.size(-2);
    if (is_causal && !windowed() && range.first == 0) {
      // The causal rule alone: only the keys from first_row on can be hidden.
      const std::int64_t keys = range.end;
      if (first_row < keys) {
        const at::Tensor hidden = at::ones({rows, keys - first_row}, scores.options().dtype(at::kBool))
                                      .triu(/*diagonal=*/1);
        scores.narrow(-1, first_row, keys - first_row).masked_fill_(hidden, minus_infinity);
      }
    } else if (const at::Tensor hidden = hidden_keys(first_row, rows, range); hidden.defined()) {
      const bool in_place = at::infer_size(hidden.sizes(), scores.sizes()) == scores.sizes();
      scores = in_place ? scores.masked_fill_(hidden, minus_infinity) : scores.masked_fill(hidden, minus_infinity);
    }
    if (!mask.defined()) return scores;
    const at::Tensor block_mask = this->block_mask(first_row, rows, range);
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
    context->saved_data["window_left"] = call->rule.window_left;
    context->saved_data["window_right"] = call->rule.window_right;
    context->saved_data["chunk"] = call->rule.chunk;
    context->saved_data["softcap"] = call->rule.softcap ? at::IValue(*call->rule.softcap) : at::IValue();
    context->saved_data["sinks"] = call->rule.sinks;
    context->saved_data["left_padding"] = call->left_padding;
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
    call.rule.window_left = context->saved_data["window_left"].toInt();
    call.rule.window_right = context->saved_data["window_right"].toInt();
    call.rule.chunk = context->saved_data["chunk"].toInt();
    if (const at::IValue& softcap = context->saved_data["softcap"]; softcap.isDouble()) {
      call.rule.softcap = softcap.toDouble();
    }
    if (const at::IValue& sinks = context->saved_data["sinks"]; sinks.isTensor()) call.rule.sinks = sinks.toTensor();
    if (const at::IValue& padding = context->saved_data["left_padding"]; padding.isTensor()) {
      call.left_padding = padding.toTensor();
    }
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
  return eager_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, AttentionRule{});
}

at::Tensor eager_attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                           const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                           std::optional<double> scale, bool enable_gqa, const AttentionRule& rule) {
  TORCH_CHECK(query.dim() >= 2 && key.dim() == query.dim() && value.dim() == query.dim(),
              "scaled_dot_product_attention: query, key and value must have the same rank (≥ 2), got ",
              query.sizes(), ", ", key.sizes(), " and ", value.sizes());
  if (dropout_p != 0.0) {
    throw InputError(fmt::format(
        "the model's scaled_dot_product_attention applies dropout (dropout_p = {}), so its attention "
        "is random; export the model in eval mode (model.eval()), where Hugging Face models pass 0",
        dropout_p));
  }
  TORCH_CHECK(!rule.softcap || *rule.softcap > 0.0, "attention soft-capping must be positive, got ",
              rule.softcap.value_or(0.0));
  AttentionCall call;
  call.query = query;
  call.values = value;
  call.is_causal = is_causal;
  call.rule = rule;
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
  if (rule.chunk > 0 && call.mask.defined()) {
    // Chunks count from each sequence's first key (transformers' create_chunked_causal_mask: the
    // 2-D mask's leading zeros), read off the keys' padding.
    TORCH_CHECK(call.mask.scalar_type() == at::kBool && (call.mask.dim() < 2 || call.mask.size(-2) == 1),
                "attention chunks take the keys' padding as a boolean mask [..., 1, S], got ",
                call.mask.scalar_type(), " ", call.mask.sizes());
    call.left_padding = call.mask.cumsum(/*dim=*/-1).eq(0).sum(/*dim=*/-1, /*keepdim=*/true);
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
  const bool constant_operands = !(call.mask.defined() && call.mask.requires_grad()) &&
                                 !(rule.sinks.defined() && rule.sinks.requires_grad());
  if (differentiated && rows < length && !blocks.edits() && constant_operands) {
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
