// Every statistic on a GPU against the same statistic on the CPU: the classifiers' tensor
// definitions run where the attention is, and only per-head sums come back. Tagged [gpu]: run by
// tests/gpu/run_if_gpu.sh, which reports them skipped on a machine where LibTorch sees no GPU;
// hidden ([.gpu]) from a plain run of the test binary.
#include <limits>

#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/torch.h>
// LibTorch's glog defines CHECK as an abort; the tests mean Catch's.
#undef CHECK
#include <catch2/catch.hpp>

#include "heads/classifier_set.h"
#include "heads/registry.h"
#include "heads/row_summary.h"

using namespace headscan;

namespace {

// Numbers within `tolerance`, everything else (labels, nulls, offsets) identical.
void check_close(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b, double tolerance,
                 const std::string& where) {
  INFO(where);
  if (a.is_number() && b.is_number()) {
    CHECK(std::abs(a.get<double>() - b.get<double>()) <= tolerance);
  } else if (a.is_object() && b.is_object()) {
    REQUIRE(a.size() == b.size());
    for (const auto& item : a.items()) {
      REQUIRE(b.contains(item.key()));
      check_close(item.value(), b.at(item.key()), tolerance, where + "." + item.key());
    }
  } else if (a.is_array() && b.is_array()) {
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) check_close(a[i], b[i], tolerance, where + "[" + std::to_string(i) + "]");
  } else {
    CHECK(a == b);
  }
}

struct RandomBatch {
  at::Tensor ids, valid, queries, special, idf, attention;
  RandomBatch(bool causal, std::int64_t batch, std::int64_t heads, std::int64_t length) {
    torch::manual_seed(5);
    ids = torch::randint(3, 12, {batch, length}, torch::kInt64);  // few ids: many repeats
    ids.select(1, 0).fill_(0);                                     // BOS
    valid = torch::ones({batch, length}, torch::kBool);
    valid[batch - 1].slice(0, length - 3).fill_(false);            // padding at the end of one row
    queries = valid.clone();
    special = ids.eq(0);
    idf = (torch::rand({batch, length}) * 4).round().masked_fill(special | ~valid, -std::numeric_limits<float>::infinity());
    at::Tensor scores = torch::randn({batch, heads, length, length}) * 3;
    if (causal) {
      scores.masked_fill_(torch::ones({length, length}, torch::kBool).triu(1), -std::numeric_limits<float>::infinity());
    }
    attention = torch::softmax(scores, -1);
  }
  BatchContext context(BatchSource source, std::int64_t index, bool causal) const {
    return BatchContext{ids, valid, queries, special, idf, causal, /*has_bos=*/true, source, index};
  }
  RandomBatch to(const c10::Device& device) const {
    RandomBatch moved = *this;
    for (at::Tensor* tensor : {&moved.ids, &moved.valid, &moved.queries, &moved.special, &moved.idf, &moved.attention}) {
      *tensor = tensor->to(device);
    }
    return moved;
  }
};

nlohmann::ordered_json classify(const std::vector<RandomBatch>& batches, bool causal, int layers, int heads) {
  ClassifierSet set;
  set.begin(ModelShape{layers, heads, causal});
  std::int64_t index = 0;
  for (const RandomBatch& batch : batches) {
    for (const BatchSource source : {BatchSource::corpus, BatchSource::probe}) {
      set.begin_batch();
      for (int layer = 0; layer < layers; ++layer) {
        set.observe(layer, batch.attention, batch.context(source, index, causal));
      }
      set.end_batch();
    }
    ++index;
  }
  return set.finalize(resolve_thresholds({}), heads);
}

}  // namespace

TEST_CASE("gpu: the row summary's definition on the GPU equals the CPU's fused pass", "[.gpu]") {
  REQUIRE(torch::cuda::is_available());
  for (const bool causal : {false, true}) {
    const RandomBatch batch(causal, 2, 3, 40);
    const RowSummary cpu = summarize_rows(batch.attention, causal);
    const RowSummary gpu = summarize_rows(batch.attention.cuda(), causal);
    CHECK(torch::allclose(cpu.entropy, gpu.entropy.cpu(), 1e-5, 1e-6));
    CHECK(torch::equal(cpu.max, gpu.max.cpu()));
    CHECK(torch::equal(cpu.argmax, gpu.argmax.cpu()));
    CHECK(torch::allclose(cpu.distance, gpu.distance.cpu(), 1e-5, 1e-5));
  }
}

TEST_CASE("gpu: every classifier's scores and labels on the GPU equal the CPU's", "[.gpu]") {
  REQUIRE(torch::cuda::is_available());
  for (const bool causal : {false, true}) {
    INFO("causal " << causal);
    std::vector<RandomBatch> cpu{RandomBatch(causal, 3, 4, 24), RandomBatch(causal, 2, 4, 17)};
    std::vector<RandomBatch> gpu;
    for (const RandomBatch& batch : cpu) gpu.push_back(batch.to(c10::Device(c10::kCUDA, 0)));
    const nlohmann::ordered_json on_cpu = classify(cpu, causal, 2, 4);
    const nlohmann::ordered_json on_gpu = classify(gpu, causal, 2, 4);
    check_close(on_cpu, on_gpu, 1e-5, "heads");
    // The same GPU input twice gives the same sums bit for bit (no order-dependent atomics).
    CHECK(classify(gpu, causal, 2, 4) == on_gpu);
  }
}
