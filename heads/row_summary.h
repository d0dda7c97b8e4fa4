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

// Of each query i of a row block (heads/row_block.h), i = first_row + q:
struct RowSummary {
  at::Tensor entropy;   // [B, H, Q] float: -sum_j A log A, in nats
  at::Tensor max;       // [B, H, Q] float: max_j A
  at::Tensor argmax;    // [B, H, Q] int64: the first key holding max_j A, a position 0 .. T − 1
  at::Tensor distance;  // [B, H, Q] float: sum_j A |i - j|
};

// attention: a row block [B, H, Q, T], queries first_row .. first_row + Q − 1 (the whole [B, H, T, T]
// with first_row 0). In causal models keys j > i hold no weight and are skipped. On the CPU, one
// fused pass over each row (measured faster); on any other device, the tensor definition below,
// over a few heads at a time so that its temporaries stay small beside the block.
RowSummary summarize_rows(const at::Tensor& attention, bool causal, std::int64_t first_row = 0);

// The definition of the summary as tensor operations, on the attention's own device: the fused CPU
// pass is tested equal to it (tests/test_row_summary.cpp). The first key holding the largest weight
// is argmax's. Four passes over the attention (a masked copy for causal models, the entropy terms,
// the largest weight with its key, the distances), each a memory-bound kernel on a GPU.
RowSummary summarize_rows_by_tensor_ops(const at::Tensor& attention, bool causal, std::int64_t first_row = 0);

// The definition over a few of the block's [Q, T] maps at a time (at least one), concatenated: the
// same values as one call, with temporaries a few times `chunk_elements` rather than a few times the
// block. kSummaryChunkElements: 128 MiB of float32, the chunk of devices other than the CPU.
constexpr std::int64_t kSummaryChunkElements = std::int64_t{1} << 25;
RowSummary summarize_rows_in_chunks(const at::Tensor& attention, bool causal, std::int64_t chunk_elements,
                                    std::int64_t first_row = 0);

// The summary of one row block of a layer's attention for one batch, computed once and shared by
// the classifiers of that batch (BatchContext::rows). Without a cache every call computes it.
class RowSummaryCache {
 public:
  const RowSummary& get(int layer, const at::Tensor& attention, bool causal, std::int64_t first_row = 0);
  // Another per-row statistic of the block that several classifiers read (the weight on separator
  // and punctuation keys, say), by name: `compute` runs once per block of a layer and batch.
  const at::Tensor& shared(int layer, const at::Tensor& attention, std::int64_t first_row, const std::string& name,
                           const std::function<at::Tensor()>& compute);

 private:
  // Forgets what belongs to another layer, block or attention tensor.
  void settle(int layer, const at::Tensor& attention, std::int64_t first_row);

  int layer_ = -1;
  const void* data_ = nullptr;
  std::int64_t first_row_ = -1;
  bool has_summary_ = false;
  RowSummary summary_;
  std::map<std::string, at::Tensor> shared_;
};

// The summary of the block `attention` of context.first_row: the cache's, or computed into `local`.
const RowSummary& row_summary(int layer, const at::Tensor& attention, const BatchContext& context,
                              RowSummary& local);

}  // namespace headscan
