// headscan_bench_forward: the baseline of the overhead benchmark (bench/run_overhead.sh). Runs the
// model over a corpus in exactly the batches headscan forms (analyzer/run/passes/corpus_pass.cpp:
// same tokenizer, windows, Batcher and right-padding with the BOS id), with plain torch::jit
// forward calls and no instrumentation, and prints the wall time and the peak resident set size.
//
// Not replicated, because it is headscan's own work: the forward over the first sequence that
// finds the layers and causality (--probe-forward adds it, to tell its cost apart), the probe
// sequences, the example sequences, the graph instrumentation, the classifiers and the report.
// Causality is taken from headscan.json's "causal" (default true, as for every decoder) because
// finding it needs the attention.
//
// Warm-up: TorchScript's profiling executor records shapes on the first call of forward, and
// that first call holds more memory than later ones (about 0.5 GB more peak RSS for one batch of
// 8 x 370 tokens of GPT-2 small). headscan's first call is its shape probe over one sequence, so
// the baseline first runs forward once on two tokens (negligible work); --no-warmup leaves it out.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/script.h>
#include <torch/torch.h>

#include <torch/cuda.h>

#include "analyzer/corpus/text_lines.h"
#include "analyzer/model/device.h"
#include "analyzer/model/model_archive.h"
#include "analyzer/run/sequences/sequences.h"
#include "analyzer/run/sequences/text_setup.h"
#include "analyzer/tokenizers/tokenizer.h"

namespace {

struct Options {
  std::string model_path;
  std::string corpus_path;
  std::string tokenizer_path;
  int threads = 0;
  std::int64_t batch_size = 8;
  std::int64_t max_length = 0;
  bool probe_forward = false;  // one extra forward over the first sequence, as headscan's probe
  bool warmup = true;          // one forward over two tokens before the batches
  int passes = 1;              // times the corpus is run; forward time is reported per pass
  std::string device = "cpu";  // where the model runs, as headscan's --device
};

struct Totals {
  std::int64_t batches = 0;
  std::int64_t sequences = 0;
  std::int64_t tokens = 0;     // real tokens, BOS included
  std::int64_t positions = 0;  // B * T summed over batches, padding included
  std::vector<double> forward_seconds;  // per pass: time inside the batches' forward calls
};

// ids [B, T] int64, right-padded with `pad_id` to the longest sequence
// (analyzer/run/sequences/batch_tensors.cpp).
at::Tensor to_ids(const std::vector<headscan::Sequence>& batch, std::int64_t pad_id, at::Tensor& valid) {
  std::size_t length = 0;
  for (const auto& sequence : batch) length = std::max(length, sequence.ids.size());
  const auto rows = static_cast<std::int64_t>(batch.size());
  const auto columns = static_cast<std::int64_t>(length);
  at::Tensor ids = torch::full({rows, columns}, pad_id, torch::kInt64);
  valid = torch::zeros({rows, columns}, torch::kBool);
  auto ids_view = ids.accessor<std::int64_t, 2>();
  auto valid_view = valid.accessor<bool, 2>();
  for (std::int64_t b = 0; b < rows; ++b) {
    for (std::size_t t = 0; t < batch[b].ids.size(); ++t) {
      ids_view[b][t] = batch[b].ids[t];
      valid_view[b][t] = true;
    }
  }
  return ids;
}

// forward(self, input_ids, attention_mask, ...): headscan passes a mask when there is a second
// tensor argument (analyzer/model/model.cpp read_forward_schema).
bool takes_attention_mask(torch::jit::Module& module) {
  const auto& args = module.get_method("forward").function().getSchema().arguments();
  if (args.size() < 3) return false;
  return c10::TensorType::get()->isSubtypeOf(*args[2].type()) || args[2].type()->kind() == c10::TypeKind::AnyType;
}

Totals run(const Options& options) {
  torch::NoGradGuard no_grad;
  if (options.threads > 0) torch::set_num_threads(options.threads);

  torch::jit::ExtraFilesMap extra{{"tokenizer.json", ""}, {"headscan.json", ""}};
  torch::jit::Module module = torch::jit::load(options.model_path, torch::kCPU, extra);
  module.eval();
  const c10::Device device = headscan::resolve_device(options.device);
  module.to(device);
  headscan::reset_peak_device_memory(device);
  const bool takes_mask = takes_attention_mask(module);

  // The tokenizer, BOS and max_length exactly as headscan resolves them.
  const headscan::ModelMetadata metadata =
      headscan::parse_model_metadata(extra["headscan.json"], options.model_path + ":headscan.json");
  const headscan::TextSetup text = headscan::resolve_text_setup(headscan::TextSources{
      options.tokenizer_path, options.model_path, extra["tokenizer.json"], &metadata, options.max_length});
  const headscan::Tokenizer* tokenizer = text.tokenizer.get();
  const headscan::SequenceShape& shape = text.shape;
  const std::int64_t pad_id = text.bos ? text.bos->id : 0;
  const bool causal = metadata.causal.value_or(true);

  auto forward = [&](const at::Tensor& ids, const at::Tensor& valid) {
    std::vector<c10::IValue> inputs;
    inputs.reserve(2);
    inputs.emplace_back(ids.to(device));
    if (takes_mask) inputs.emplace_back(valid.to(device, torch::kInt64));
    c10::IValue output = module.forward(std::move(inputs));
    if (device.is_cuda()) torch::cuda::synchronize(device.index());  // the time is the GPU's work, not its queueing
    return output;
  };

  if (options.warmup) {
    const at::Tensor ids = torch::full({1, 2}, pad_id, torch::kInt64);
    forward(ids, torch::ones_like(ids, torch::kBool));
  }

  Totals totals;
  auto run_batches = [&](const std::vector<std::vector<headscan::Sequence>>& batches) {
    for (const auto& batch : batches) {
      at::Tensor valid;
      const at::Tensor ids = to_ids(batch, pad_id, valid);
      const auto begin = std::chrono::steady_clock::now();
      const c10::IValue output = forward(ids, valid);
      totals.forward_seconds.back() += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      ++totals.batches;
      totals.sequences += ids.size(0);
      totals.tokens += valid.sum().item<std::int64_t>();
      totals.positions += ids.numel();
    }
  };

  bool probed = !options.probe_forward;
  for (int pass = 0; pass < options.passes; ++pass) {
    totals.forward_seconds.push_back(0.0);
    headscan::Batcher batcher(static_cast<std::size_t>(options.batch_size), takes_mask || causal,
                              static_cast<std::size_t>(options.batch_size) * 32);
    headscan::TextCorpusReader reader(options.corpus_path);
    headscan::CorpusLine line;
    while (reader.next(line)) {
      for (auto& sequence : headscan::make_sequences(tokenizer->encode(line.text), *tokenizer, shape, line.line_number)) {
        if (!probed) {
          // analyzer/model/model_shape.cpp: [1, T] with T >= 2, all positions valid.
          std::vector<std::int64_t> ids = sequence.ids;
          while (ids.size() < 2) ids.push_back(ids.back());
          const at::Tensor input = torch::tensor(ids, torch::kInt64).unsqueeze(0);
          forward(input, torch::ones_like(input, torch::kBool));
          probed = true;
        }
        batcher.add(std::move(sequence));
      }
      run_batches(batcher.take_ready());
    }
    run_batches(batcher.flush());
  }
  return totals;
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  Options options;
  CLI::App app{"headscan_bench_forward: a bare forward pass over the batches headscan would run"};
  app.add_option("model", options.model_path, "TorchScript model (.pt) with tokenizer.json and headscan.json")
      ->required();
  app.add_option("corpus", options.corpus_path, "text corpus, one document per line")->required();
  app.add_option("--tokenizer", options.tokenizer_path, "tokenizer.json to use instead of the embedded one");
  app.add_option("--threads", options.threads, "CPU threads for LibTorch (0: all cores)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--batch-size", options.batch_size, "sequences per forward call")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--max-length", options.max_length, "tokens per sequence, BOS included (default: headscan.json)")
      ->check(CLI::Range(std::int64_t{2}, std::int64_t{1} << 20));
  app.add_flag("--probe-forward", options.probe_forward,
               "also run one forward over the first sequence before the batches, as headscan does to find "
               "the layers and causality");
  app.add_option("--passes", options.passes, "run the corpus this many times; forward_seconds is the median pass")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--device", options.device, "cpu, cuda or cuda:N, as headscan's --device")->capture_default_str();
  bool no_warmup = false;
  app.add_flag("--no-warmup", no_warmup, "no forward over two tokens before the batches (see the source)");
  CLI11_PARSE(app, argc, argv);
  options.warmup = !no_warmup;

  try {
    const Totals totals = run(options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    fmt::print("bare forward: {} batches, {} sequences, {} tokens ({} positions with padding), threads {}\n",
               totals.batches, totals.sequences, totals.tokens, totals.positions, torch::get_num_threads());
    std::vector<double> passes = totals.forward_seconds;
    std::sort(passes.begin(), passes.end());
    fmt::print("wall_seconds {:.3f}\npeak_rss_kib {}\nforward_seconds {:.3f}\n", seconds, usage.ru_maxrss,
               passes[passes.size() / 2]);
    const std::int64_t peak = headscan::peak_device_memory(headscan::resolve_device(options.device));
    if (peak >= 0) fmt::print("peak_device_memory_bytes {}\n", peak);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "headscan_bench_forward: error: {}\n", e.what());
    return 1;
  }
}
