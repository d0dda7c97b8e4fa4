// headscan's attention op (analyzer/model/eager_attention.h) computed in blocks of query rows: its
// output and the blocks it hands to the capture equal the unblocked math backend whatever the rows
// of a block, head scales and edits act on the right rows, and the planner's choice of rows.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include <torch/torch.h>

#include "analyzer/model/attention_plan.h"
#include "analyzer/model/capture.h"
#include "analyzer/model/eager_attention.h"
#include "analyzer/model/model.h"
#include "tests/fixtures.h"

using headscan::AttentionCallback;
using headscan::AttentionEdit;
using headscan::CaptureScope;
using headscan::HeadScales;

namespace {

// The unblocked math backend as PyTorch writes it: K and V repeated per group of query heads,
// scores, causal rule and mask, safe softmax, A·V. Returns A·V and the probabilities.
std::pair<at::Tensor, at::Tensor> unblocked(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                            const std::optional<at::Tensor>& mask, bool causal, bool gqa) {
  at::Tensor keys = k;
  at::Tensor values = v;
  if (gqa && q.size(-3) != k.size(-3)) {
    keys = k.repeat_interleave(q.size(-3) / k.size(-3), -3);
    values = v.repeat_interleave(q.size(-3) / k.size(-3), -3);
  }
  const double root = std::sqrt(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  at::Tensor scores = at::matmul(q * root, keys.transpose(-2, -1) * root);
  const double minus_infinity = -std::numeric_limits<double>::infinity();
  if (causal) {
    const at::Tensor visible = at::ones({q.size(-2), k.size(-2)}, at::kBool).tril();
    scores = scores.masked_fill(visible.logical_not(), minus_infinity);
  }
  if (mask) {
    scores = mask->scalar_type() == at::kBool ? scores.masked_fill(mask->logical_not(), minus_infinity)
                                              : scores + *mask;
  }
  const at::Tensor probs = at::_safe_softmax(scores, -1);
  return {at::matmul(probs, values), probs};
}

struct Case {
  const char* name;
  std::int64_t heads, kv_heads, length, keys;
  bool causal;
  int mask;  // 0 none, 1 bool, 2 float, 3 bool with rows that see no key
};

double max_difference(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kFloat) - b.to(at::kFloat)).abs().max().item<double>();
}

}  // namespace

TEST_CASE("headscan's attention op equals the unblocked math backend whatever the rows of a block",
          "[attention_op]") {
  torch::manual_seed(3);
  const Case cases[] = {
      {"causal", 4, 4, 23, 23, true, 0},
      {"bool mask", 4, 4, 23, 23, false, 1},
      {"float mask and causal", 4, 4, 23, 23, true, 2},
      {"GQA", 8, 2, 23, 23, true, 1},
      {"GQA without a mask", 8, 2, 19, 19, false, 0},
      {"L != S", 4, 4, 9, 23, false, 2},
      {"rows that see no key, causal", 8, 2, 23, 23, true, 3},
      {"rows that see no key", 4, 4, 23, 23, false, 3},
  };
  const std::int64_t batch = 2;
  const std::int64_t width = 16;
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    const double tolerance = dtype == at::kFloat ? 1e-5 : 1e-2;
    for (const Case& c : cases) {
      INFO(c.name << " in " << c10::toString(dtype));
      // q non-contiguous, as a model's [B, L, H, E] projection transposed.
      const at::Tensor q = at::randn({batch, c.length, c.heads, width}).transpose(1, 2).to(dtype);
      const at::Tensor k = at::randn({batch, c.kv_heads, c.keys, width}).to(dtype);
      const at::Tensor v = at::randn({batch, c.kv_heads, c.keys, width}).to(dtype);
      std::optional<at::Tensor> mask;
      if (c.mask == 1) {
        at::Tensor visible = at::rand({batch, 1, c.length, c.keys}) > 0.3;
        visible.select(-1, 0).fill_(true);
        mask = visible;
      } else if (c.mask == 3) {
        // Left padding (rows 0-2 see no key; under the causal rule row 3 sees keys 0-3, hidden
        // too) and a row hidden from everything: _safe_softmax's all-0 rows.
        at::Tensor visible = at::rand({batch, 1, c.length, c.keys}) > 0.3;
        visible.narrow(-1, 0, 4).fill_(false);
        visible.narrow(-2, 0, 3).fill_(false);
        visible.select(-2, 10).fill_(false);
        mask = visible;
      } else if (c.mask == 2) {
        mask = (at::randn({batch, 1, c.length, c.keys}) * 2).to(dtype);
      }
      const bool gqa = c.kv_heads != c.heads;
      const auto [expected, expected_probs] = unblocked(q, k, v, mask, c.causal, gqa);
      for (const std::int64_t rows : {std::int64_t{1}, std::int64_t{7}, c.length}) {
        INFO("rows " << rows);
        std::vector<at::Tensor> blocks;
        std::vector<std::int64_t> first_rows;
        const AttentionCallback collect = [&](int layer, const at::Tensor& block, std::int64_t first_row) {
          CHECK(layer == 0);
          CHECK(block.scalar_type() == at::kFloat);
          blocks.push_back(block.clone());
          first_rows.push_back(first_row);
        };
        at::Tensor output;
        int layers = 0;
        {
          const CaptureScope scope(batch, c.keys, collect, nullptr, nullptr, rows);
          output = headscan::eager_attention(q, k, v, mask, 0.0, c.causal, std::nullopt, gqa);
          layers = scope.layers_captured();
          if (c.length == c.keys) {
            CHECK(scope.block_use().rows == rows);
            CHECK(scope.block_use().length == c.length);
            CHECK(scope.block_use().block_bytes == batch * c.heads * rows * c.keys * 4);
          }
        }
        REQUIRE(output.sizes() == expected.sizes());
        CHECK(output.scalar_type() == dtype);
        CHECK(max_difference(output, expected) < tolerance);
        if (c.length != c.keys) {  // not self-attention of the batch: nothing captured
          CHECK(layers == 0);
          CHECK(blocks.empty());
          continue;
        }
        CHECK(layers == 1);
        const std::int64_t count = (c.length + rows - 1) / rows;
        REQUIRE(static_cast<std::int64_t>(blocks.size()) == count);
        for (std::int64_t b = 0; b < count; ++b) CHECK(first_rows[static_cast<std::size_t>(b)] == b * rows);
        const at::Tensor whole = at::cat(blocks, /*dim=*/2);
        REQUIRE(whole.sizes() == expected_probs.sizes());
        CHECK(max_difference(whole, expected_probs) < tolerance);
      }
    }
  }
}

TEST_CASE("headscan's attention op takes 3-D operands and runs outside a capture", "[attention_op]") {
  torch::manual_seed(5);
  const at::Tensor q = at::randn({6, 11, 8});  // [B*H, L, E], bmm style
  const at::Tensor k = at::randn({6, 11, 8});
  const at::Tensor v = at::randn({6, 11, 5});
  const auto [expected, expected_probs] = unblocked(q, k, v, std::nullopt, true, false);
  CHECK(max_difference(headscan::eager_attention(q, k, v, std::nullopt, 0.0, true, std::nullopt, false), expected) <
        1e-5);
  std::vector<at::Tensor> blocks;
  const AttentionCallback collect = [&](int, const at::Tensor& block, std::int64_t) { blocks.push_back(block); };
  const CaptureScope scope(/*batch=*/2, /*length=*/11, collect, nullptr, nullptr, /*block_rows=*/4);
  const at::Tensor output = headscan::eager_attention(q, k, v, std::nullopt, 0.0, true, std::nullopt, false);
  CHECK(max_difference(output, expected) < 1e-5);
  REQUIRE(blocks.size() == 3);
  CHECK(blocks[0].sizes() == at::IntArrayRef({2, 3, 4, 11}));
  CHECK(blocks[2].sizes() == at::IntArrayRef({2, 3, 3, 11}));
  CHECK(max_difference(at::cat(blocks, 2).view({6, 11, 11}), expected_probs) < 1e-5);
  // No query rows: an empty output of the right shape.
  const at::Tensor none = headscan::eager_attention(q.narrow(1, 0, 0), k, v, std::nullopt, 0.0, false, std::nullopt,
                                                    false);
  CHECK(none.sizes() == at::IntArrayRef({6, 0, 5}));
}

TEST_CASE("head scales and edits act on each block's own rows", "[attention_op]") {
  torch::manual_seed(7);
  const std::int64_t batch = 2, heads = 8, kv_heads = 2, length = 20, width = 8;
  const at::Tensor q = at::randn({batch, heads, length, width});
  const at::Tensor k = at::randn({batch, kv_heads, length, width});
  const at::Tensor v = at::randn({batch, kv_heads, length, width});
  const auto [plain, probs] = unblocked(q, k, v, std::nullopt, true, true);
  const at::Tensor values = v.repeat_interleave(heads / kv_heads, 1);

  // Head 3 of sequence 1 scaled by 0.5, every other head by 1; the callback sees them unscaled.
  at::Tensor scale = at::ones({batch, heads});
  scale.index_put_({1, 3}, 0.5);
  const HeadScales scales{scale};
  const at::Tensor scaled = at::matmul(probs * scale.view({batch, heads, 1, 1}), values);
  // The rows of queries 5 and later made uniform over the first three keys, by absolute position.
  std::vector<std::int64_t> edited_rows;
  const AttentionEdit edit = [&](int layer, const at::Tensor& block, std::int64_t first_row) {
    CHECK(layer == 0);
    at::Tensor result = block.clone();
    for (std::int64_t r = 0; r < block.size(2); ++r) {
      if (first_row + r < 5) continue;
      edited_rows.push_back(first_row + r);
      result.select(2, r).zero_();
      result.select(2, r).narrow(-1, 0, 3).fill_(1.0 / 3.0);
    }
    return result;
  };
  at::Tensor edited_probs = probs.clone();
  edited_probs.narrow(2, 5, length - 5).zero_();
  edited_probs.narrow(2, 5, length - 5).narrow(3, 0, 3).fill_(1.0 / 3.0);
  const at::Tensor edited = at::matmul(edited_probs, values);

  for (const std::int64_t rows : {std::int64_t{1}, std::int64_t{7}, length}) {
    INFO("rows " << rows);
    at::Tensor seen;
    const AttentionCallback collect = [&](int, const at::Tensor& block, std::int64_t) {
      seen = seen.defined() ? at::cat({seen, block}, 2) : block.clone();
    };
    {
      const CaptureScope scope(batch, length, collect, &scales, nullptr, rows);
      const at::Tensor output = headscan::eager_attention(q, k, v, std::nullopt, 0.0, true, std::nullopt, true);
      CHECK(max_difference(output, scaled) < 1e-5);
      CHECK(max_difference(output, plain) > 1e-3);
      CHECK(max_difference(seen, probs) < 1e-5);
    }
    edited_rows.clear();
    {
      const CaptureScope scope(batch, length, AttentionCallback(), nullptr, &edit, rows);
      const at::Tensor output = headscan::eager_attention(q, k, v, std::nullopt, 0.0, true, std::nullopt, true);
      CHECK(max_difference(output, edited) < 1e-5);
    }
    REQUIRE(edited_rows.size() == static_cast<std::size_t>(length - 5));
    for (std::size_t i = 0; i < edited_rows.size(); ++i) CHECK(edited_rows[i] == static_cast<std::int64_t>(5 + i));
  }
}

TEST_CASE("gradients through the blocks, recomputed one block at a time, equal the unblocked ones",
          "[attention_op]") {
  torch::manual_seed(13);
  const std::int64_t batch = 2, heads = 8, kv_heads = 2, length = 20, width = 8;
  const at::Tensor q0 = at::randn({batch, length, heads, width}).transpose(1, 2);
  const at::Tensor k0 = at::randn({batch, kv_heads, length, width});
  const at::Tensor v0 = at::randn({batch, kv_heads, length, width});
  const at::Tensor mask = at::randn({batch, 1, length, length});
  const at::Tensor weights = at::randn({batch, heads, length, width});  // loss = Σ weights · output
  // ∂loss/∂(q, k, v, head scale) with `rows` per block (0: the unblocked reference) and, when
  // `scaled`, the layer's head scales in the graph.
  const auto gradients = [&](std::int64_t rows, bool scaled) {
    const at::Tensor q = q0.clone().requires_grad_();
    const at::Tensor k = k0.clone().requires_grad_();
    const at::Tensor v = v0.clone().requires_grad_();
    const at::Tensor scale = (at::arange(batch * heads, at::kFloat).view({batch, heads}) / 16 + 0.5).requires_grad_();
    at::Tensor output;
    if (rows == 0) {
      const auto [plain, probs] = unblocked(q, k, v, mask, true, true);
      output = scaled ? at::matmul(probs * scale.view({batch, heads, 1, 1}), v.repeat_interleave(4, 1)) : plain;
    } else {
      const HeadScales scales{scaled ? scale : at::Tensor()};
      const CaptureScope scope(batch, length, AttentionCallback(), &scales, nullptr, rows);
      output = headscan::eager_attention(q, k, v, mask, 0.0, true, std::nullopt, true);
    }
    (output * weights).sum().backward();
    std::vector<at::Tensor> result{q.grad(), k.grad(), v.grad()};
    if (scaled) result.push_back(scale.grad());
    return result;
  };
  for (const bool scaled : {false, true}) {
    INFO("head scales " << scaled);
    const std::vector<at::Tensor> expected = gradients(0, scaled);
    for (const std::int64_t rows : {std::int64_t{1}, std::int64_t{7}, length}) {
      INFO("rows " << rows);
      const std::vector<at::Tensor> got = gradients(rows, scaled);
      REQUIRE(got.size() == expected.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        INFO("gradient " << i);
        REQUIRE(got[i].defined());
        CHECK(expected[i].abs().max().item<double>() > 1e-3);
        CHECK(max_difference(got[i], expected[i]) < 1e-4);
      }
    }
  }
}

TEST_CASE("the attention block planner", "[attention_op]") {
  using headscan::attention_block_rows;
  constexpr std::int64_t kMiB = std::int64_t{1} << 20;
  // GPT-2's shape at 512 tokens, a batch of 8: 96 MiB, within a 256 MiB budget: one block.
  CHECK(attention_block_rows(0, 8 * 12, 512, 512, 4, 256 * kMiB) == 512);
  // A budget of 100 rows: ten blocks of 100.
  CHECK(attention_block_rows(0, 32, 1000, 1000, 4, 32 * 1000 * 4 * 100) == 100);
  // 300 rows fit: four blocks, spread evenly (250 rows each, not 300, 300, 300, 100).
  CHECK(attention_block_rows(0, 32, 1000, 1000, 4, 32 * 1000 * 4 * 300) == 250);
  // bfloat16 counts as float32 (the statistics read float32 blocks).
  CHECK(attention_block_rows(0, 32, 1000, 1000, 2, 32 * 1000 * 4 * 100) == 100);
  // Not even one row fits: one row all the same.
  CHECK(attention_block_rows(0, 32, 1000, 1000, 4, 1000) == 1);
  // Requested rows, at most the length.
  CHECK(attention_block_rows(7, 32, 1000, 1000, 4, 0) == 7);
  CHECK(attention_block_rows(5000, 32, 1000, 1000, 4, 0) == 1000);
  CHECK(attention_block_rows(0, 32, 1, 1, 4, 0) == 1);
  // 32 heads at 32k tokens never fit one block.
  const std::int64_t budget = headscan::attention_block_budget(c10::Device(c10::kCPU));
  CHECK(budget >= kMiB);
  CHECK(budget <= 256 * kMiB);
  const std::int64_t rows = attention_block_rows(0, 32, 32768, 32768, 4, budget);
  CHECK(rows >= 1);
  CHECK(rows < 32768);
  CHECK(32 * rows * 32768 * 4 <= budget);
  CHECK(headscan::free_memory_bytes(c10::Device(c10::kCPU)) > 0);
}

TEST_CASE("a TorchScript archive's SDPA in blocks of 7 rows: the same attention, logits and head gradients",
          "[attention_op][e2e]") {
  const auto model = headscan::InstrumentedModel::load(headscan::testing::fixture("llama_sdpa.pt"));
  CHECK(model->blockwise_attention_count() == 2);
  CHECK(model->attention_block_use().rows == 0);
  torch::manual_seed(11);
  const at::Tensor ids = at::randint(3, 64, {2, 30}, at::kLong);
  const at::Tensor mask = at::ones_like(ids);
  // Attention maps, logits and ∂(logits sum)/∂ head scales with `rows` per block.
  struct Run {
    std::vector<at::Tensor> maps;
    at::Tensor logits, gradients;
  };
  const auto run = [&](std::int64_t rows) {
    model->set_attention_block(rows);
    Run result;
    HeadScales scales{at::ones({2, 4}).requires_grad_(), at::ones({2, 4}).requires_grad_()};
    const headscan::ForwardOutput output = model->forward(
        ids, &mask,
        [&](int layer, const at::Tensor& block, std::int64_t first_row) {
          if (first_row == 0) {
            CHECK(static_cast<std::size_t>(layer) == result.maps.size());
            result.maps.push_back(block.clone());
          } else {
            result.maps.back() = at::cat({result.maps.back(), block}, 2);
          }
        },
        &scales);
    REQUIRE(output.logits);
    output.logits->sum().backward();
    result.logits = output.logits->detach();
    result.gradients = at::stack({scales[0].grad(), scales[1].grad()});
    return result;
  };
  // The model keeps the use of its longest call, the largest block among those.
  const Run blocked = run(7);
  CHECK(model->attention_block_use().rows == 7);
  CHECK(model->attention_block_use().length == 30);
  CHECK(model->attention_block_use().block_bytes == 2 * 4 * 7 * 30 * 4);
  const Run whole = run(0);
  CHECK(model->attention_block_use().rows == 30);
  REQUIRE(blocked.maps.size() == 2);
  for (std::size_t layer = 0; layer < 2; ++layer) {
    REQUIRE(blocked.maps[layer].sizes() == whole.maps[layer].sizes());
    CHECK(max_difference(blocked.maps[layer], whole.maps[layer]) < 1e-6);
  }
  CHECK(max_difference(blocked.logits, whole.logits) < 1e-5);
  CHECK(whole.gradients.abs().max().item<double>() > 1e-3);
  CHECK(max_difference(blocked.gradients, whole.gradients) < 1e-4);
}
