// Time each head classifier's observe() on one layer's attention of a given shape: where the
// overhead of headscan over a bare forward pass goes. Not a test.
//
//   headscan_bench_classifiers [--batch 8] [--heads 12] [--length 1024] [--bidirectional] [--repeats 3]
//                              [--block Q] [--device cpu|cuda|cuda:N]
// --block Q feeds the layer in row blocks of Q rows (copies, as headscan's attention op hands them
// over), each classifier's time summed over the blocks; 0, the default, the whole matrix at once.
// Each time is taken after the device has finished (synchronized on a GPU). "row summary (tensor
// ops)" times the summary's definition as tensor operations (what devices other than the CPU run)
// beside the one-pass kernel the CPU runs, the measurement that keeps that kernel.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "analyzer/model/device.h"
#include "heads/device_sums.h"

#include "heads/classifier.h"
#include "heads/registry.h"
#include "heads/row_summary.h"

namespace {

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t batch = 8, heads = 12, length = 1024, block_rows = 0;
  int repeats = 3, threads = 0;
  bool bidirectional = false;
  std::string device_name = "cpu";
  CLI::App app{"time each head classifier's observe() on one layer's attention"};
  app.add_option("--batch", batch);
  app.add_option("--heads", heads);
  app.add_option("--length", length);
  app.add_option("--repeats", repeats);
  app.add_option("--block", block_rows);
  app.add_option("--threads", threads);
  app.add_flag("--bidirectional", bidirectional);
  app.add_option("--device", device_name);
  CLI11_PARSE(app, argc, argv);
  if (threads > 0) torch::set_num_threads(threads);
  torch::NoGradGuard no_grad;
  torch::manual_seed(0);

  const c10::Device device = headscan::resolve_device(device_name);
  const auto finish = [&] {
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
  };
  at::Tensor scores = torch::randn({batch, heads, length, length}).to(device);
  if (!bidirectional) {
    scores.masked_fill_(torch::ones({length, length}, torch::kBool).triu(1).to(device),
                        -std::numeric_limits<float>::infinity());
  }
  finish();
  auto start = std::chrono::steady_clock::now();
  const at::Tensor attention = torch::softmax(scores, -1);
  finish();
  std::printf("softmax itself (reference): %.1f ms\n", milliseconds_since(start));

  const at::Tensor ids = torch::randint(3, 2000, {batch, length}, torch::kInt64).to(device);
  const at::Tensor valid = torch::ones({batch, length}, torch::kBool).to(device);
  at::Tensor special = torch::zeros({batch, length}, torch::kBool);
  special.select(1, 0).fill_(true);
  special = special.to(device);
  const at::Tensor idf = torch::rand({batch, length}).to(device).masked_fill(special, -std::numeric_limits<float>::infinity());
  // The row blocks fed, from their first rows.
  std::vector<std::pair<std::int64_t, at::Tensor>> blocks;
  const std::int64_t step = block_rows > 0 ? std::min(block_rows, length) : length;
  for (std::int64_t first = 0; first < length; first += step) {
    const at::Tensor rows = attention.narrow(2, first, std::min(step, length - first));
    blocks.emplace_back(first, step == length ? rows : rows.contiguous());
  }

  auto classifiers = headscan::make_classifiers();
  const headscan::ModelShape shape{1, static_cast<int>(heads), !bidirectional};
  for (auto& classifier : classifiers) classifier->begin(shape);
  // Milliseconds per repeat: the shared row summary first, then each classifier in pipeline order.
  // Rows: the row summary, each classifier, the batch's sums brought to the host; then, apart, the
  // summary's tensor definition.
  std::vector<std::vector<double>> times(classifiers.size() + 3);
  for (int r = 0; r < repeats; ++r) {
    headscan::RowSummaryCache rows;
    headscan::DeviceSums sums;
    headscan::BatchContext context{ids, valid, valid, special, idf, !bidirectional, true,
                                   headscan::BatchSource::corpus, r, nullptr, &rows, &sums};
    std::vector<double> spent(classifiers.size() + 1, 0.0);
    for (const auto& [first_row, block] : blocks) {
      context.first_row = first_row;
      start = std::chrono::steady_clock::now();
      rows.get(0, block, !bidirectional, first_row);
      finish();
      spent[0] += milliseconds_since(start);
      for (std::size_t c = 0; c < classifiers.size(); ++c) {
        if (classifiers[c]->source() != headscan::BatchSource::corpus) continue;
        start = std::chrono::steady_clock::now();
        classifiers[c]->observe(0, block, context);
        finish();
        spent[c + 1] += milliseconds_since(start);
      }
    }
    times[0].push_back(spent[0]);
    for (std::size_t c = 0; c < classifiers.size(); ++c) {
      if (classifiers[c]->source() == headscan::BatchSource::corpus) times[c + 1].push_back(spent[c + 1]);
    }
    start = std::chrono::steady_clock::now();
    sums.flush();
    times[classifiers.size() + 1].push_back(milliseconds_since(start));
    start = std::chrono::steady_clock::now();
    headscan::summarize_rows_in_chunks(attention, !bidirectional, headscan::kSummaryChunkElements);
    finish();
    times[classifiers.size() + 2].push_back(milliseconds_since(start));
  }
  double total = 0;
  for (std::size_t c = 0; c < times.size(); ++c) {
    if (times[c].empty()) continue;
    std::sort(times[c].begin(), times[c].end());
    const double median = times[c][times[c].size() / 2];
    const std::string name = c == 0                        ? "row summary"
                             : c <= classifiers.size()     ? classifiers[c - 1]->name()
                             : c == classifiers.size() + 1 ? "sums to host"
                                                           : "(row summary as tensor ops, not in the total)";
    std::printf("%-16s %8.1f ms (median of %d)\n", name.c_str(), median, repeats);
    if (c <= classifiers.size() + 1) total += median;
  }
  std::printf("%-16s %8.1f ms per layer and batch of %lld x %lld heads x %lld tokens, blocks of %lld rows\n", "total",
              total, static_cast<long long>(batch), static_cast<long long>(heads), static_cast<long long>(length),
              static_cast<long long>(step));
  return 0;
}
