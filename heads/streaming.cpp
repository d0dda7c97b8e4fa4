// streaming (causal models): over queries i ≥ S + W, the mean of Σ_{j<S} A[i,j] + Σ_{i−W<j≤i} A[i,j],
// the attention a StreamingLLM cache of S sink tokens and a window of the W most recent tokens
// keeps (Xiao et al. 2023); DuoAttention (Xiao et al. 2024) gives such heads that cache. Labelled
// `streaming` when ≥ the threshold `streaming`. S and W are the parameters `streaming_sink` and
// `streaming_window` (--sink, --window). Null when no query is that far into its sequence.
#include <cmath>

#include <fmt/format.h>
#include <torch/torch.h>

#include "analyzer/errors.h"
#include "heads/mean_score.h"
#include "heads/registry.h"
#include "heads/streaming.h"

namespace headscan {
namespace {

class StreamingClassifier : public MeanScoreClassifier {
 public:
  StreamingClassifier()
      : MeanScoreClassifier(
            HeadType{{{"streaming", "mean attention on the first S tokens and the W most recent (j > i − W), over "
                                    "queries i ≥ S + W"}},
                     "streaming",
                     {{"streaming", 0.95},
                      {kStreamingSink, static_cast<double>(kDefaultStreamingSink)},
                      {kStreamingWindow, static_cast<double>(kDefaultStreamingWindow)}},
                     "StreamingLLM (Xiao et al. 2023); DuoAttention (Xiao et al. 2024)",
                     "#77AADD",
                     "strm",
                     /*primary_rank=*/11,
                     /*causal_only=*/true}) {}

  void configure(const Thresholds& thresholds) override { window_ = streaming_window(thresholds); }

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    if (!context.causal) return;
    const std::int64_t length = attention.size(-1);
    const std::int64_t first = window_.sink + window_.window;  // the first query counted
    if (length <= first) return;
    // Rows i ≥ first: the sink's keys 0..S−1 and the window's keys i−W+1..i, which lie side by side
    // in each row: a band [B, H, T − first, W] viewed in place (row i's window starts T + 1 elements
    // after row i−1's). Each row's few sums in float (W weights of at most 1: within a few 1e-7),
    // measured 6 times faster than summing in double; the means add them in double.
    const at::Tensor rows = attention.stride(-1) == 1 && attention.stride(-2) == length ? attention : attention.contiguous();
    const at::Tensor sink = rows.slice(/*dim=*/-2, first).slice(/*dim=*/-1, 0, window_.sink).sum(-1);
    const at::Tensor band = rows.as_strided({rows.size(0), rows.size(1), length - first, window_.window},
                                            {rows.stride(0), rows.stride(1), length + 1, 1},
                                            rows.storage_offset() + first * length + first - window_.window + 1);
    means_.add(layer, sink + band.sum(-1), context.queries.slice(/*dim=*/1, first), context.sums);
  }

 private:
  StreamingWindow window_;
};

}  // namespace

namespace {

// A size in tokens: a whole number from `lowest` to 2^31.
std::int64_t window_size(const Thresholds& thresholds, const char* name, const char* option, std::int64_t lowest,
                         std::int64_t fallback) {
  const auto found = thresholds.find(name);
  if (found == thresholds.end()) return fallback;
  const double value = found->second;
  if (!(value >= static_cast<double>(lowest) && value <= 2147483648.0 && std::floor(value) == value)) {
    throw InputError(fmt::format("{} (--threshold {}) is {}: it is a number of tokens, a whole number from {}; "
                                 "give for example {} {}",
                                 option, name, value, lowest, option, fallback));
  }
  return static_cast<std::int64_t>(value);
}

}  // namespace

StreamingWindow streaming_window(const Thresholds& thresholds) {
  StreamingWindow window;
  window.sink = window_size(thresholds, kStreamingSink, "--sink", 0, kDefaultStreamingSink);
  window.window = window_size(thresholds, kStreamingWindow, "--window", 1, kDefaultStreamingWindow);
  return window;
}

std::unique_ptr<HeadClassifier> make_streaming_classifier() { return std::make_unique<StreamingClassifier>(); }

}  // namespace headscan
