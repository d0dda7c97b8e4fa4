// Time each head classifier's observe() on one layer's attention of a given shape: where the
// overhead of headscan over a bare forward pass goes. Not a test.
//
//   headscan_bench_classifiers [--batch 8] [--heads 12] [--length 1024] [--bidirectional] [--repeats 3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include "heads/classifier.h"
#include "heads/registry.h"
#include "heads/row_summary.h"

namespace {

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t batch = 8, heads = 12, length = 1024;
  int repeats = 3, threads = 0;
  bool bidirectional = false;
  CLI::App app{"time each head classifier's observe() on one layer's attention"};
  app.add_option("--batch", batch);
  app.add_option("--heads", heads);
  app.add_option("--length", length);
  app.add_option("--repeats", repeats);
  app.add_option("--threads", threads);
  app.add_flag("--bidirectional", bidirectional);
  CLI11_PARSE(app, argc, argv);
  if (threads > 0) torch::set_num_threads(threads);
  torch::NoGradGuard no_grad;
  torch::manual_seed(0);

  at::Tensor scores = torch::randn({batch, heads, length, length});
  if (!bidirectional) {
    scores.masked_fill_(torch::ones({length, length}, torch::kBool).triu(1), -std::numeric_limits<float>::infinity());
  }
  auto start = std::chrono::steady_clock::now();
  const at::Tensor attention = torch::softmax(scores, -1);
  std::printf("softmax itself (reference): %.1f ms\n", milliseconds_since(start));

  const at::Tensor ids = torch::randint(3, 2000, {batch, length}, torch::kInt64);
  const at::Tensor valid = torch::ones({batch, length}, torch::kBool);
  at::Tensor special = torch::zeros({batch, length}, torch::kBool);
  special.select(1, 0).fill_(true);
  const at::Tensor idf = torch::rand({batch, length}).masked_fill(special, -std::numeric_limits<float>::infinity());

  auto classifiers = headscan::make_classifiers();
  const headscan::ModelShape shape{1, static_cast<int>(heads), !bidirectional};
  for (auto& classifier : classifiers) classifier->begin(shape);
  // Milliseconds per repeat: the shared row summary first, then each classifier in pipeline order.
  std::vector<std::vector<double>> times(classifiers.size() + 1);
  for (int r = 0; r < repeats; ++r) {
    headscan::RowSummaryCache rows;
    const headscan::BatchContext context{ids, valid, valid, special, idf, !bidirectional, true,
                                         headscan::BatchSource::corpus, r, nullptr, &rows};
    start = std::chrono::steady_clock::now();
    rows.get(0, attention, !bidirectional);
    times[0].push_back(milliseconds_since(start));
    for (std::size_t c = 0; c < classifiers.size(); ++c) {
      if (classifiers[c]->source() != headscan::BatchSource::corpus) continue;
      start = std::chrono::steady_clock::now();
      classifiers[c]->observe(0, attention, context);
      times[c + 1].push_back(milliseconds_since(start));
    }
  }
  double total = 0;
  for (std::size_t c = 0; c < times.size(); ++c) {
    if (times[c].empty()) continue;
    std::sort(times[c].begin(), times[c].end());
    const double median = times[c][times[c].size() / 2];
    std::printf("%-16s %8.1f ms (median of %d)\n", c == 0 ? "row summary" : classifiers[c - 1]->name().c_str(), median,
                repeats);
    total += median;
  }
  std::printf("%-16s %8.1f ms per layer and batch of %lld x %lld heads x %lld tokens\n", "total", total,
              static_cast<long long>(batch), static_cast<long long>(heads), static_cast<long long>(length));
  return 0;
}
