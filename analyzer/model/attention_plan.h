#pragma once
// How many query rows headscan's attention op computes at once (eager_attention.h): a block's
// scores and probabilities are [B, H, Q, S], and the statistics read each block in float32, so one
// block's working set is a few copies of B·H·Q·S·4 bytes. The planner picks the largest Q whose
// block tensor fits the block budget, Q = L when the whole [B, H, L, S] fits (one block, the
// unblocked computation), never Q < 1. Used by the op and by the ablation pass's batch cut (analyzer/run/passes/ablation.cpp).

#include <cstdint>

#include <c10/core/Device.h>

namespace headscan {

// Bytes one block tensor may take on `device`: a sixteenth of its free memory (the working set of
// a block, about six such tensors, then stays under 40 % of it), at most 8 MiB on the CPU and
// 1 GiB on a GPU, at least 1 MiB.
std::int64_t attention_block_budget(const c10::Device& device);

// Bytes free for new tensors on `device`: the CPU's MemAvailable (/proc/meminfo); a GPU's free
// memory as its driver reports it plus what LibTorch's caching allocator holds unused. -1 when it
// cannot be read (then the budget is the fixed cap).
std::int64_t free_memory_bytes(const c10::Device& device);

// The rows Q of each block for attention of `rows_of_heads` = B·H (query heads, all batch
// dimensions) over `length` L queries and `keys` S keys, in elements of `element_size` bytes
// (at least 4 are counted: the statistics read float32):
//   requested > 0: min(requested, L) (--attention-block);
//   requested = 0: the largest Q whose block tensor fits `budget_bytes`, spread evenly over the
//   blocks (ceil(L / ceil(L / Q))); L when everything fits; at least 1.
std::int64_t attention_block_rows(std::int64_t requested, std::int64_t rows_of_heads, std::int64_t length,
                                  std::int64_t keys, std::int64_t element_size, std::int64_t budget_bytes);

}  // namespace headscan
