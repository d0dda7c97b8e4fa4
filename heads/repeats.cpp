#include "heads/repeats.h"

#include <torch/torch.h>

#include "heads/row_block.h"

namespace headscan {

at::Tensor earlier_occurrences(const BatchContext& context, std::int64_t first_row, std::int64_t rows) {
  const at::Tensor content = context.valid & ~context.special;  // [B, T]
  const at::Tensor& ids = context.token_ids;                    // [B, T]
  const std::int64_t length = ids.size(1);
  const at::Tensor query_ids = positions(ids, first_row, first_row + rows);                    // [B, Q]
  const at::Tensor same = query_ids.unsqueeze(2) == ids.unsqueeze(1);                          // [B, Q, T]
  // Keys s < i = first_row + q: s ≤ q + first_row − 1.
  const at::Tensor before =
      torch::ones({rows, length}, ids.options().dtype(torch::kBool)).tril(/*diagonal=*/first_row - 1);
  const at::Tensor counted_queries = positions(content & context.queries, first_row, first_row + rows);
  return same & before & counted_queries.unsqueeze(2) & content.unsqueeze(1);
}

at::Tensor induction_targets(const at::Tensor& occurrences, std::int64_t first_row) {
  TORCH_CHECK(occurrences.dim() == 3, "occurrences must be [B,Q,T], got ", occurrences.sizes());
  // Occurrences s < i - 1 (s ≤ q + first_row − 2), moved one key to the right: j = s + 1 < i.
  const at::Tensor distant = occurrences.tril(/*diagonal=*/first_row - 2);
  at::Tensor targets = torch::zeros_like(occurrences);
  const std::int64_t length = occurrences.size(2);
  if (length > 1) targets.slice(2, 1).copy_(distant.slice(2, 0, length - 1));
  return targets;
}

// Targets are few per query (the earlier occurrences of its token), so their weights are
// gathered by index rather than by multiplying the whole block with a mask.
struct TargetAttentionClassifier::BlockTargets {
  at::Tensor keys;     // [N] int64: flat index (b * H * Q + q) * T + j of each target in head 0 of the block
  at::Tensor queries;  // [N] int64: b * Q + q of each target's query
  at::Tensor counted;  // [B, Q] bool: the block's queries with a target
};

struct TargetAttentionClassifier::Cache {
  BatchSource source = BatchSource::corpus;
  std::int64_t batch_index = -1;
  std::int64_t heads = 0;
  std::map<std::pair<std::int64_t, std::int64_t>, BlockTargets> blocks;  // by first row and rows
};

void TargetAttentionClassifier::observe(int layer, const at::Tensor& attention, const BatchContext& context) {
  const RowBlock block = row_block(attention, context);
  const std::int64_t batch = attention.size(0);
  const std::int64_t heads = attention.size(1);
  const std::int64_t rows = block.rows;
  const std::int64_t length = block.length;
  if (!cache_) cache_ = std::make_shared<Cache>();
  if (cache_->batch_index != context.batch_index || cache_->source != context.source || cache_->heads != heads) {
    cache_->blocks.clear();
    cache_->source = context.source;
    cache_->batch_index = context.batch_index;
    cache_->heads = heads;
  }
  auto cached = cache_->blocks.find({block.first, rows});
  if (cached == cache_->blocks.end()) {
    const at::Tensor block_targets = targets(context, block.first, rows);  // [B, Q, T]
    // nonzero() waits for the device once per block of a batch, not per layer.
    const at::Tensor found = block_targets.nonzero();  // [N, 3]: b, q, j
    const at::Tensor b = found.select(1, 0);
    const at::Tensor q = found.select(1, 1);
    const at::Tensor j = found.select(1, 2);
    BlockTargets made{(b * heads * rows + q) * length + j, b * rows + q, block_targets.any(/*dim=*/-1)};
    cached = cache_->blocks.emplace(std::make_pair(block.first, rows), std::move(made)).first;
  }
  const BlockTargets& found = cached->second;
  // [H, N]: head h's targets lie h · Q · T further into the block.
  const at::Tensor head_offsets = torch::arange(heads, found.keys.options()).unsqueeze(1) * (rows * length);
  const at::Tensor weights = attention.reshape({-1}).take(found.keys.unsqueeze(0) + head_offsets);  // [H, N]
  // Per query, the sum of its targets' weights: [B, H, Q]. Added in the targets' order on every
  // device, so the same input gives the same sums bit for bit and shards merge exactly: index_add_
  // does so on the CPU (one thread), index_put_ with accumulation on a GPU (by sorting), where
  // index_add_ would use atomics in a varying order.
  at::Tensor sums;
  if (weights.device().is_cpu()) {
    sums = torch::zeros({heads, batch * rows}, weights.options())
               .index_add_(/*dim=*/1, found.queries, weights)
               .view({heads, batch, rows})
               .permute({1, 0, 2});
  } else {
    const c10::List<std::optional<at::Tensor>> queries{std::optional<at::Tensor>(found.queries)};
    sums = torch::zeros({batch * rows, heads}, weights.options())
               .index_put_(queries, weights.t(), /*accumulate=*/true)
               .view({batch, rows, heads})
               .permute({0, 2, 1});
  }
  means_.add(layer, sums, found.counted, context.sums);
}

}  // namespace headscan
