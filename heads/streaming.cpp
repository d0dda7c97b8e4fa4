// streaming (causal models): over queries i ≥ S + W, the mean of Σ_{j<S} A[i,j] + Σ_{i−W<j≤i} A[i,j],
// the attention a StreamingLLM cache of S sink tokens and a window of the W most recent tokens
// keeps (Xiao et al. 2023); DuoAttention (Xiao et al. 2024) gives such heads that cache. Labelled
// `streaming` when ≥ the threshold `streaming`. S and W are the parameters `streaming_sink` and
// `streaming_window` (--sink, --window). Null when no query is that far into its sequence.
//
// streaming_duo: the same mean at the cache DuoAttention ships, S = 128 and W = 256, over queries
// i ≥ 384; no label (the label is the streaming score's, at the cache the KV-cache plan keeps).
#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <torch/torch.h>

#include "analyzer/errors.h"
#include "heads/mean_score.h"
#include "heads/registry.h"
#include "heads/streaming.h"

namespace headscan {
namespace {

// attention: a row block [B, H, Q, T] of a causal model, the queries first_row .. first_row + Q − 1.
// Per query i ≥ S + W of the block, the weight `cache` keeps: Σ_{j<S} A[i,j] + Σ_{i−W<j≤i} A[i,j],
// [B, H, N] for the block's last N rows (those i ≥ S + W); undefined when it has none.
at::Tensor streaming_cache_weights(const at::Tensor& attention, std::int64_t first_row, const StreamingWindow& cache) {
  const std::int64_t length = attention.size(-1);
  const std::int64_t rows = attention.size(-2);
  // The first query counted, absolute and within the block.
  const std::int64_t first = std::max(cache.sink + cache.window, first_row);
  const std::int64_t last = first_row + rows;
  if (first >= last || first >= length) return at::Tensor();
  // Rows i ≥ first: the sink's keys 0..S−1 and the window's keys i−W+1..i, which lie side by side
  // in each row: a band [B, H, last − first, W] viewed in place (row i's window starts T + 1 elements
  // after row i−1's; row i is the block's row i − first_row). Each row's few sums in float (W weights
  // of at most 1: within a few 1e-7), measured 6 times faster than summing in double; the means add
  // them in double.
  const at::Tensor block = attention.stride(-1) == 1 && attention.stride(-2) == length ? attention : attention.contiguous();
  const std::int64_t local = first - first_row;
  const at::Tensor sink = block.slice(/*dim=*/-2, local).slice(/*dim=*/-1, 0, cache.sink).sum(-1);
  const at::Tensor band = block.as_strided({block.size(0), block.size(1), last - first, cache.window},
                                           {block.stride(0), block.stride(1), length + 1, 1},
                                           block.storage_offset() + local * length + first - cache.window + 1);
  return sink + band.sum(-1);
}

class StreamingClassifier : public MeanScoreClassifier {
 public:
  // `fixed`: a cache of these sizes whatever the thresholds; without it, the thresholds' sizes.
  StreamingClassifier(HeadType type, std::optional<StreamingWindow> fixed)
      : MeanScoreClassifier(std::move(type)), fixed_(fixed) {
    if (fixed_) window_ = *fixed_;
  }

  void configure(const Thresholds& thresholds) override {
    if (!fixed_) window_ = streaming_window(thresholds);
  }

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    if (!context.causal) return;
    TORCH_CHECK(attention.dim() == 4, "attention must be a row block [B,H,Q,T], got ", attention.sizes());
    const at::Tensor kept = streaming_cache_weights(attention, context.first_row, window_);
    if (!kept.defined()) return;
    const std::int64_t first = std::max(window_.sink + window_.window, context.first_row);
    const std::int64_t last = context.first_row + attention.size(-2);
    means_.add(layer, kept, context.queries.slice(/*dim=*/1, first, last), context.sums);
  }

 private:
  std::optional<StreamingWindow> fixed_;
  StreamingWindow window_;
};

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

std::unique_ptr<HeadClassifier> make_streaming_classifier() {
  return std::make_unique<StreamingClassifier>(
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
               /*causal_only=*/true},
      std::nullopt);
}

std::unique_ptr<HeadClassifier> make_streaming_duo_classifier() {
  return std::make_unique<StreamingClassifier>(
      HeadType{{{"streaming_duo", "mean attention on the first 128 tokens and the 256 most recent, over queries "
                                  "i ≥ 384 (DuoAttention's cache)"}},
               "",
               {},
               "DuoAttention (Xiao et al. 2024)"},
      kDuoAttentionCache);
}

}  // namespace headscan
