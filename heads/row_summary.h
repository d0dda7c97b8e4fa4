#pragma once
// What several classifiers need from every attention row, computed in one pass over the
// attention: the entropy (entropy), the largest weight and its key (confidence, positional,
// rare_word), and the mean distance (mean_distance). One pass instead of one per classifier is
// most of the difference between headscan and a bare forward pass (bench/classifier_cost.cpp).

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include <ATen/core/Tensor.h>

namespace headscan {

struct BatchContext;

struct RowSummary {
  at::Tensor entropy;   // [B, H, T] float: -sum_j A log A, in nats
  at::Tensor max;       // [B, H, T] float: max_j A
  at::Tensor argmax;    // [B, H, T] int64: the first key holding max_j A
  at::Tensor distance;  // [B, H, T] float: sum_j A |i - j|
};

// attention: [B, H, T, T]. In causal models keys j > i hold no weight and are skipped. On the CPU,
// one fused pass over each row (measured faster); on any other device, the tensor definition below,
// over a few heads at a time so that its temporaries stay small beside the layer's attention.
RowSummary summarize_rows(const at::Tensor& attention, bool causal);

// The definition of the summary as tensor operations, on the attention's own device: the fused CPU
// pass is tested equal to it (tests/test_row_summary.cpp). The first key holding the largest weight
// is argmax's. Four passes over the attention (a masked copy for causal models, the entropy terms,
// the largest weight with its key, the distances), each a memory-bound kernel on a GPU.
RowSummary summarize_rows_by_tensor_ops(const at::Tensor& attention, bool causal);

// The definition over a few of the batch's [T, T] maps at a time (at least one), concatenated: the
// same values as one call, with temporaries a few times `chunk_elements` rather than a few times the
// layer's attention. kSummaryChunkElements: 128 MiB of float32, the chunk of devices other than the CPU.
constexpr std::int64_t kSummaryChunkElements = std::int64_t{1} << 25;
RowSummary summarize_rows_in_chunks(const at::Tensor& attention, bool causal, std::int64_t chunk_elements);

// The summary of one layer's attention for one batch, computed once and shared by the classifiers
// of that batch (BatchContext::rows). Without a cache every call computes it.
class RowSummaryCache {
 public:
  const RowSummary& get(int layer, const at::Tensor& attention, bool causal);
  // Another per-row statistic of the layer that several classifiers read (the weight on separator
  // and punctuation keys, say), by name: `compute` runs once per layer and batch.
  const at::Tensor& shared(int layer, const at::Tensor& attention, const std::string& name,
                           const std::function<at::Tensor()>& compute);

 private:
  // Forgets what belongs to another layer or attention tensor.
  void settle(int layer, const at::Tensor& attention);

  int layer_ = -1;
  const void* data_ = nullptr;
  bool has_summary_ = false;
  RowSummary summary_;
  std::map<std::string, at::Tensor> shared_;
};

const RowSummary& row_summary(int layer, const at::Tensor& attention, const BatchContext& context,
                              RowSummary& local);

}  // namespace headscan
