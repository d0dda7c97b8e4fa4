// The one-pass row kernel against the library's definition of the same statistics as tensor
// operations (what devices other than the CPU run).
#include <limits>

#include <torch/torch.h>
// LibTorch's glog defines CHECK as an abort; the tests mean Catch's.
#undef CHECK
#include <catch2/catch.hpp>

#include "heads/row_summary.h"

using headscan::summarize_rows;

namespace {

at::Tensor random_attention(std::int64_t length, bool causal) {
  torch::manual_seed(3);
  at::Tensor scores = torch::randn({2, 3, length, length}) * 3;
  if (causal) {
    scores.masked_fill_(torch::ones({length, length}, torch::kBool).triu(1), -std::numeric_limits<float>::infinity());
  }
  return torch::softmax(scores, -1);
}

// The fused CPU pass against the library's tensor definition (what other devices run), and both
// against LibTorch's own xlogy.
void check_against_reference(const at::Tensor& attention, bool causal) {
  const auto summary = summarize_rows(attention, causal);
  const auto definition = headscan::summarize_rows_by_tensor_ops(attention, causal);
  CHECK(torch::allclose(summary.entropy, definition.entropy, 1e-5, 1e-6));
  CHECK(torch::allclose(definition.entropy, -torch::xlogy(attention, attention).sum(-1), 1e-5, 1e-6));
  CHECK(torch::equal(summary.max, definition.max));
  CHECK(torch::equal(summary.argmax, definition.argmax));
  CHECK(torch::allclose(summary.distance, definition.distance, 1e-5, 1e-5));
}

}  // namespace

TEST_CASE("row summary: entropy, max, argmax and distance equal their tensor definitions", "[row-summary]") {
  for (const std::int64_t length : {1, 2, 7, 33, 200}) {
    INFO("length " << length);
    check_against_reference(random_attention(length, /*causal=*/false), false);
    check_against_reference(random_attention(length, /*causal=*/true), true);
  }
}

TEST_CASE("row summary: exact zeros, one-hot rows and ties", "[row-summary]") {
  at::Tensor attention = torch::zeros({1, 1, 4, 4});
  attention[0][0][0][0] = 1.0;                                     // one-hot: entropy 0
  attention[0][0][1] = torch::tensor({0.5, 0.5, 0.0, 0.0});        // tie: first key
  attention[0][0][2] = torch::tensor({0.25, 0.25, 0.25, 0.25});    // uniform (not causal)
  attention[0][0][3] = torch::tensor({0.0, 1e-30, 0.0, 1.0 - 1e-30});  // a subnormal-scale weight
  const auto summary = summarize_rows(attention, /*causal=*/false);
  CHECK(summary.entropy[0][0][0].item<float>() == 0.0f);
  CHECK(summary.entropy[0][0][1].item<float>() == Approx(std::log(2.0)).epsilon(1e-6));
  CHECK(summary.entropy[0][0][2].item<float>() == Approx(std::log(4.0)).epsilon(1e-6));
  CHECK(summary.entropy[0][0][3].item<float>() == Approx(0.0).margin(1e-27));
  CHECK(summary.argmax[0][0][1].item<std::int64_t>() == 0);
  CHECK(summary.argmax[0][0][2].item<std::int64_t>() == 0);
  CHECK(summary.argmax[0][0][3].item<std::int64_t>() == 3);
  CHECK(summary.distance[0][0][2].item<float>() == Approx((2 + 1 + 0 + 1) / 4.0));
  // The tensor definition gives the same on these rows, causal or not.
  for (const bool causal : {false, true}) {
    const auto fused = summarize_rows(attention, causal);
    const auto definition = headscan::summarize_rows_by_tensor_ops(attention, causal);
    CHECK(torch::allclose(fused.entropy, definition.entropy, 1e-5, 1e-6));
    CHECK(torch::equal(fused.max, definition.max));
    CHECK(torch::equal(fused.argmax, definition.argmax));
    CHECK(torch::allclose(fused.distance, definition.distance, 1e-5, 1e-6));
  }
}

TEST_CASE("row summary: the definition over chunks of heads equals one call", "[row-summary]") {
  for (const bool causal : {false, true}) {
    const at::Tensor attention = random_attention(33, causal);  // [2, 3, 33, 33]: 6 maps
    const auto whole = headscan::summarize_rows_by_tensor_ops(attention, causal);
    // 1, 2 and 4 maps per chunk (4 leaves a chunk of 2), and more than the batch holds.
    for (const std::int64_t maps : {1, 2, 4, 100}) {
      INFO("causal " << causal << ", " << maps << " map(s) per chunk");
      const auto chunked = headscan::summarize_rows_in_chunks(attention, causal, maps * 33 * 33);
      CHECK(chunked.entropy.sizes() == whole.entropy.sizes());
      CHECK(torch::equal(chunked.entropy, whole.entropy));
      CHECK(torch::equal(chunked.max, whole.max));
      CHECK(torch::equal(chunked.argmax, whole.argmax));
      CHECK(torch::equal(chunked.distance, whole.distance));
    }
  }
}
