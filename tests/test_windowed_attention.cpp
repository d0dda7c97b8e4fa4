// headscan's attention op with its rule (analyzer/model/eager_attention.h, AttentionRule: sliding
// and local windows, chunks, soft-capping, sinks) against a straightforward full-matrix reference
// whose visibility is written element by element from transformers' mask functions: its output, the
// blocks it hands to the capture and its gradients (recomputed block by block) at lengths shorter
// than, equal to and longer than the window, with the keys' padding and grouped heads.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include <torch/torch.h>

#include "analyzer/model/capture.h"
#include "analyzer/model/eager_attention.h"
#include "analyzer/model/model.h"

using headscan::AttentionCallback;
using headscan::AttentionRule;
using headscan::CaptureScope;
using headscan::HeadScales;

namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Whether query i of sequence b sees key j: transformers' masking_utils, one function per rule
// (causal_mask_function, sliding_window_overlay(W): j > i − W, i.e. window_left = W − 1,
// sliding_window_bidirectional_overlay(W): |i − j| ≤ W, chunked_overlay(C, left_padding)), and-ed
// with the keys' padding.
bool sees(const AttentionRule& rule, bool causal, const std::vector<bool>& padding, std::int64_t left_padding,
          std::int64_t i, std::int64_t j) {
  if (!padding[static_cast<std::size_t>(j)]) return false;
  if (causal && j > i) return false;
  if (rule.window_left >= 0 && j < i - rule.window_left) return false;
  if (rule.window_right >= 0 && j > i + rule.window_right) return false;
  if (rule.chunk > 0 && floor_div(j - left_padding, rule.chunk) != floor_div(i - left_padding, rule.chunk)) {
    return false;
  }
  return true;
}

// The full-matrix attention as transformers' eager attention computes it: K and V repeated per
// group, scores scaled then soft-capped, −inf where a key is not seen, softmax (with each head's
// sink as one more logit, dropped after it; rows that see nothing all 0 without sinks). Returns
// A·V and the probabilities [B, H, L, S].
std::pair<at::Tensor, at::Tensor> reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                            const at::Tensor& padding, bool causal, const AttentionRule& rule) {
  const std::int64_t batch = q.size(0), length = q.size(2), keys = k.size(2);
  const at::Tensor keys_repeated = k.repeat_interleave(q.size(1) / k.size(1), 1);
  const at::Tensor values_repeated = v.repeat_interleave(q.size(1) / k.size(1), 1);
  at::Tensor scores = at::matmul(q, keys_repeated.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (rule.softcap) scores = at::tanh(scores / *rule.softcap) * *rule.softcap;
  at::Tensor visible = at::zeros({batch, 1, length, keys}, at::kBool);
  for (std::int64_t b = 0; b < batch; ++b) {
    std::vector<bool> real(static_cast<std::size_t>(keys));
    std::int64_t left = 0;
    bool leading = true;
    for (std::int64_t j = 0; j < keys; ++j) {
      real[static_cast<std::size_t>(j)] = padding[b][0][0][j].item<bool>();
      if (leading && !real[static_cast<std::size_t>(j)]) ++left;
      if (real[static_cast<std::size_t>(j)]) leading = false;
    }
    for (std::int64_t i = 0; i < length; ++i) {
      for (std::int64_t j = 0; j < keys; ++j) visible[b][0][i][j] = sees(rule, causal, real, left, i, j);
    }
  }
  scores = scores.masked_fill(visible.logical_not(), -std::numeric_limits<double>::infinity());
  at::Tensor probs;
  if (rule.sinks.defined()) {
    const at::Tensor sink = rule.sinks.view({1, -1, 1, 1}).expand({batch, -1, length, 1});
    probs = at::softmax(at::cat({scores, sink}, -1), -1).narrow(-1, 0, keys);
  } else {
    probs = at::_safe_softmax(scores, -1);
  }
  return {at::matmul(probs, values_repeated), probs};
}

double max_difference(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kFloat) - b.to(at::kFloat)).abs().max().item<double>();
}

struct Rule {
  const char* name;
  bool causal;
  std::int64_t window_left, window_right, chunk;
  std::optional<double> softcap;
  bool sinks;
  bool left_padding;  // the second sequence padded on the left (else on the right)
};

const Rule kRules[] = {
    {"sliding window of 5 (Mistral, Gemma 3, Cohere2, OLMo 3)", true, 4, -1, 0, std::nullopt, false, false},
    {"local window of 3 on both sides (ModernBERT)", false, 3, 3, 0, std::nullopt, false, false},
    {"chunks of 6 (Llama 4)", true, -1, -1, 6, std::nullopt, false, false},
    {"chunks of 6 after left padding", true, -1, -1, 6, std::nullopt, false, true},
    {"soft-capping and a sliding window (Gemma 2)", true, 4, -1, 0, 1.5, false, false},
    {"sinks and a sliding window (gpt-oss)", true, 4, -1, 0, std::nullopt, true, false},
    {"sinks, soft-capping and causal only", true, -1, -1, 0, 2.0, true, false},
    {"sliding window, left padding", true, 4, -1, 0, std::nullopt, false, true},
};

AttentionRule rule_of(const Rule& r, std::int64_t heads) {
  AttentionRule rule;
  rule.window_left = r.window_left;
  rule.window_right = r.window_right;
  rule.chunk = r.chunk;
  rule.softcap = r.softcap;
  if (r.sinks) rule.sinks = at::randn({heads}) * 2;
  return rule;
}

// [B, 1, 1, L] keys' padding: the first sequence whole, the second with 3 padding keys.
at::Tensor padding_of(std::int64_t batch, std::int64_t length, bool left) {
  at::Tensor padding = at::ones({batch, 1, 1, length}, at::kBool);
  const std::int64_t padded = std::min<std::int64_t>(3, length - 1);
  if (padded > 0) padding[batch - 1].narrow(-1, left ? 0 : length - padded, padded).fill_(false);
  return padding;
}

}  // namespace

TEST_CASE("headscan's windowed attention op equals the full-matrix reference at every length and block",
          "[attention_op]") {
  torch::manual_seed(43);
  const std::int64_t batch = 2, width = 8;
  for (const auto& [heads, kv_heads] : {std::pair<std::int64_t, std::int64_t>{4, 4}, {8, 2}}) {
    for (const Rule& r : kRules) {
      // Shorter than, equal to and longer than the window (5) and the chunk (6).
      for (const std::int64_t length : {std::int64_t{3}, std::int64_t{5}, std::int64_t{6}, std::int64_t{23}}) {
        for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
          INFO(r.name << ", " << heads << " heads on " << kv_heads << ", length " << length << ", "
                      << c10::toString(dtype));
          // bfloat16: the op in bfloat16 against the reference in float32 on the same (rounded) values.
          const double tolerance = dtype == at::kFloat ? 1e-5 : 2e-2;
          const AttentionRule rule = rule_of(r, heads);
          const at::Tensor q = at::randn({batch, length, heads, width}).transpose(1, 2).to(dtype);
          const at::Tensor k = at::randn({batch, kv_heads, length, width}).to(dtype);
          const at::Tensor v = at::randn({batch, kv_heads, length, width}).to(dtype);
          const at::Tensor padding = padding_of(batch, length, r.left_padding);
          const auto [expected, expected_probs] =
              reference(q.to(at::kFloat), k.to(at::kFloat), v.to(at::kFloat), padding, r.causal, rule);
          for (const std::int64_t rows : {std::int64_t{1}, std::int64_t{4}, std::int64_t{7}, length}) {
            INFO("rows " << rows);
            std::vector<at::Tensor> blocks;
            const AttentionCallback collect = [&](int, const at::Tensor& block, std::int64_t first_row) {
              CHECK(first_row == static_cast<std::int64_t>(blocks.size()) * rows);
              blocks.push_back(block.clone());
            };
            at::Tensor output;
            {
              const CaptureScope scope(batch, length, collect, nullptr, nullptr, rows);
              output = headscan::eager_attention(q, k, v, padding, 0.0, r.causal, std::nullopt, kv_heads != heads,
                                                 rule);
            }
            REQUIRE(output.sizes() == expected.sizes());
            CHECK(output.scalar_type() == dtype);
            // Padding rows that see no key: 0 in both (the reference's _safe_softmax, or the sink).
            CHECK(max_difference(output, expected) < tolerance);
            const at::Tensor whole = at::cat(blocks, /*dim=*/2);
            REQUIRE(whole.sizes() == expected_probs.sizes());
            CHECK(max_difference(whole, expected_probs) < tolerance);
          }
          // Without the padding mask (a model exported without one): the rule alone.
          const at::Tensor whole_keys = at::ones({batch, 1, 1, length}, at::kBool);
          const auto [unpadded, unpadded_probs] =
              reference(q.to(at::kFloat), k.to(at::kFloat), v.to(at::kFloat), whole_keys, r.causal, rule);
          const AttentionCallback none;  // the scope keeps a reference to it
          const CaptureScope scope(batch, length, none, nullptr, nullptr, 4);
          CHECK(max_difference(headscan::eager_attention(q, k, v, std::nullopt, 0.0, r.causal, std::nullopt,
                                                         kv_heads != heads, rule),
                               unpadded) < tolerance);
        }
      }
    }
  }
}

TEST_CASE("the windowed op reads only the keys a block can see", "[attention_op]") {
  // A value that is NaN would poison A·V of every block that reads it (0 · NaN is NaN): key 0 is in
  // the first block's window only (rows 0-7 of blocks of 8, window of 2), so the later blocks'
  // outputs stay finite; and each block's probabilities are 0 outside the window.
  torch::manual_seed(44);
  const std::int64_t length = 40;
  AttentionRule rule;
  rule.window_left = 2;
  const at::Tensor q = at::randn({1, 2, length, 4});
  const at::Tensor k = at::randn({1, 2, length, 4});
  at::Tensor v = at::randn({1, 2, length, 4});
  v.narrow(2, 0, 1).fill_(std::numeric_limits<float>::quiet_NaN());  // key 0: seen by rows 0-2 only
  std::vector<at::Tensor> blocks;
  const AttentionCallback collect = [&](int, const at::Tensor& block, std::int64_t) { blocks.push_back(block); };
  const CaptureScope scope(1, length, collect, nullptr, nullptr, 8);
  const at::Tensor output = headscan::eager_attention(q, k, v, std::nullopt, 0.0, true, std::nullopt, false, rule);
  CHECK(output.narrow(2, 8, length - 8).isfinite().all().item<bool>());
  CHECK(output.narrow(2, 0, 8).isnan().all().item<bool>());
  REQUIRE(blocks.size() == 5);
  const at::Tensor probs = at::cat(blocks, 2);
  const at::Tensor row = at::arange(length).view({length, 1});
  const at::Tensor key = at::arange(length).view({1, length});
  const at::Tensor outside = (key > row).logical_or(key < row - 2);
  CHECK(probs.masked_select(outside.expand_as(probs)).eq(0).all().item<bool>());
  CHECK(max_difference(probs.sum(-1), at::ones({1, 2, length})) < 1e-6);
}

TEST_CASE("gradients through the windowed op, recomputed one block at a time, equal autograd of the reference",
          "[attention_op]") {
  torch::manual_seed(45);
  const std::int64_t batch = 2, heads = 8, kv_heads = 2, length = 21, width = 8;
  for (const Rule& r : kRules) {
    INFO(r.name);
    const AttentionRule rule = rule_of(r, heads);
    const at::Tensor q0 = at::randn({batch, length, heads, width}).transpose(1, 2);
    const at::Tensor k0 = at::randn({batch, kv_heads, length, width});
    const at::Tensor v0 = at::randn({batch, kv_heads, length, width});
    const at::Tensor padding = padding_of(batch, length, r.left_padding);
    const at::Tensor weights = at::randn({batch, heads, length, width});  // loss = Σ weights · output
    // ∂loss/∂(q, k, v, head scale) with `rows` per block (0: the reference) and the head scales.
    const auto gradients = [&](std::int64_t rows) {
      const at::Tensor q = q0.clone().requires_grad_();
      const at::Tensor k = k0.clone().requires_grad_();
      const at::Tensor v = v0.clone().requires_grad_();
      const at::Tensor scale = (at::arange(batch * heads, at::kFloat).view({batch, heads}) / 16 + 0.5).requires_grad_();
      at::Tensor output;
      if (rows == 0) {
        const at::Tensor probs = reference(q, k, v, padding, r.causal, rule).second;
        output = at::matmul(probs * scale.view({batch, heads, 1, 1}), v.repeat_interleave(heads / kv_heads, 1));
      } else {
        const HeadScales scales{scale};
        const AttentionCallback none;
        const CaptureScope scope(batch, length, none, &scales, nullptr, rows);
        output = headscan::eager_attention(q, k, v, padding, 0.0, r.causal, std::nullopt, true, rule);
      }
      (output * weights).sum().backward();
      return std::vector<at::Tensor>{q.grad(), k.grad(), v.grad(), scale.grad()};
    };
    const std::vector<at::Tensor> expected = gradients(0);
    for (const std::int64_t rows : {std::int64_t{1}, std::int64_t{4}, std::int64_t{7}, length}) {
      INFO("rows " << rows);
      const std::vector<at::Tensor> got = gradients(rows);
      for (std::size_t i = 0; i < got.size(); ++i) {
        INFO("gradient " << i);
        REQUIRE(got[i].defined());
        CHECK(expected[i].abs().max().item<double>() > 1e-3);
        CHECK(max_difference(got[i], expected[i]) < 1e-4);
      }
    }
  }
}

TEST_CASE("the windowed op refuses chunks over a mask that is not the keys' padding", "[attention_op]") {
  AttentionRule rule;
  rule.chunk = 4;
  const at::Tensor q = at::randn({1, 2, 8, 4});
  const at::Tensor full_mask = at::ones({1, 1, 8, 8}, at::kBool);
  CHECK_THROWS_WITH(headscan::eager_attention(q, q, q, full_mask, 0.0, true, std::nullopt, false, rule),
                    Catch::Contains("attention chunks take the keys' padding as a boolean mask [..., 1, S]"));
}
