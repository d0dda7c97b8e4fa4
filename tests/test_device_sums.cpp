// DeviceSums: a batch's per-head sums wait on the attention's device and reach their receivers
// together, in order, with their values; HeadMeans totals are the same through it as at once.
#include <torch/torch.h>
// LibTorch's glog defines CHECK as an abort; the tests mean Catch's.
#undef CHECK
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "heads/device_sums.h"
#include "heads/head_means.h"

using headscan::DeviceSums;
using headscan::HeadMeans;

TEST_CASE("device sums: values reach their receivers at flush, in order", "[device-sums]") {
  DeviceSums sums;
  std::vector<std::string> seen;
  sums.add(torch::tensor({1.5f, 2.5f}), [&](const double* values, std::int64_t count) {
    CHECK(count == 2);
    seen.push_back("a " + std::to_string(values[0]) + " " + std::to_string(values[1]));
  });
  sums.add(torch::tensor({std::int64_t{7}}), [&](const double* values, std::int64_t count) {
    CHECK(count == 1);
    seen.push_back("b " + std::to_string(values[0]));
  });
  CHECK(seen.empty());  // nothing before the flush
  CHECK_FALSE(sums.empty());
  sums.flush();
  CHECK(seen == std::vector<std::string>{"a 1.500000 2.500000", "b 7.000000"});
  CHECK(sums.empty());
  sums.flush();  // nothing pending: nothing again
  CHECK(seen.size() == 2);
}

TEST_CASE("device sums: a throwing receiver stops the batch, and clear drops what waits", "[device-sums]") {
  DeviceSums sums;
  int later = 0;
  sums.add(torch::zeros({1}), [](const double*, std::int64_t) { throw std::runtime_error("broken layer"); });
  sums.add(torch::zeros({1}), [&](const double*, std::int64_t) { ++later; });
  CHECK_THROWS_WITH(sums.flush(), "broken layer");
  CHECK(later == 0);
  CHECK(sums.empty());
  sums.add(torch::zeros({1}), [&](const double*, std::int64_t) { ++later; });
  sums.clear();
  sums.flush();
  CHECK(later == 0);
  CHECK_THROWS(sums.add(torch::zeros({2, 2}), [](const double*, std::int64_t) {}));  // 1-D only
}

TEST_CASE("device sums: head means through a flush equal head means added at once", "[device-sums]") {
  torch::manual_seed(11);
  const headscan::ModelShape shape{2, 3, true};
  HeadMeans deferred, immediate;
  deferred.resize(shape);
  immediate.resize(shape);
  DeviceSums sums;
  for (int batch = 0; batch < 3; ++batch) {
    for (int layer = 0; layer < 2; ++layer) {
      const at::Tensor values = torch::rand({4, 3, 9});
      const at::Tensor counted = torch::rand({4, 9}) > 0.3;
      deferred.add(layer, values, counted, &sums);
      immediate.add(layer, values, counted);
    }
    CHECK(deferred.count(0) < immediate.count(0));  // waiting for the flush
    sums.flush();
  }
  for (int layer = 0; layer < 2; ++layer) {
    CHECK(deferred.count(layer) == immediate.count(layer));
    for (int head = 0; head < 3; ++head) CHECK(deferred.mean(layer, head) == immediate.mean(layer, head));
  }
}
