#include "heads/repeats.h"

#include <torch/torch.h>

namespace headscan {

at::Tensor earlier_occurrences(const BatchContext& context) {
  const at::Tensor content = context.valid & ~context.special;                            // [B, T]
  const at::Tensor same = context.token_ids.unsqueeze(2) == context.token_ids.unsqueeze(1);  // [B, T, T]
  const std::int64_t length = context.token_ids.size(1);
  const at::Tensor before = torch::ones({length, length}, context.token_ids.options().dtype(torch::kBool)).tril(/*diagonal=*/-1);
  return same & before & (content & context.queries).unsqueeze(2) & content.unsqueeze(1);
}

at::Tensor induction_targets(const at::Tensor& occurrences) {
  TORCH_CHECK(occurrences.dim() == 3, "occurrences must be [B,T,T], got ", occurrences.sizes());
  // Occurrences s < i - 1, moved one key to the right: j = s + 1 < i.
  const at::Tensor distant = occurrences.tril(/*diagonal=*/-2);
  at::Tensor targets = torch::zeros_like(occurrences);
  const std::int64_t length = occurrences.size(2);
  if (length > 1) targets.slice(2, 1).copy_(distant.slice(2, 0, length - 1));
  return targets;
}

// Targets are few per query (the earlier occurrences of its token), so their weights are
// gathered by index rather than by multiplying the whole [B, H, T, T] attention with a mask.
struct TargetAttentionClassifier::Cache {
  BatchSource source = BatchSource::corpus;
  std::int64_t batch_index = -1;
  std::int64_t heads = 0;
  at::Tensor keys;     // [H, N] int64: flat index into attention [B*H*T*T] of each head's N targets
  at::Tensor queries;  // [N] int64: b * T + i of each target's query
  at::Tensor counted;  // [B, T] bool
};

void TargetAttentionClassifier::observe(int layer, const at::Tensor& attention, const BatchContext& context) {
  TORCH_CHECK(attention.dim() == 4, "attention must be [B,H,T,T], got ", attention.sizes());
  const std::int64_t batch = attention.size(0);
  const std::int64_t heads = attention.size(1);
  const std::int64_t length = attention.size(2);
  if (!cache_) cache_ = std::make_shared<Cache>();
  if (cache_->batch_index != context.batch_index || cache_->source != context.source || cache_->heads != heads) {
    const at::Tensor batch_targets = targets(context);  // [B, T, T]
    // nonzero() waits for the device once per batch, not per layer.
    const at::Tensor found = batch_targets.nonzero();   // [N, 3]: b, i, j
    const at::Tensor b = found.select(1, 0);
    const at::Tensor i = found.select(1, 1);
    const at::Tensor j = found.select(1, 2);
    const at::Tensor head = torch::arange(heads, found.options()).unsqueeze(1);  // [H, 1]
    cache_->keys = ((b.unsqueeze(0) * heads + head) * length + i.unsqueeze(0)) * length + j.unsqueeze(0);
    cache_->queries = b * length + i;
    cache_->counted = batch_targets.any(/*dim=*/-1);
    cache_->source = context.source;
    cache_->batch_index = context.batch_index;
    cache_->heads = heads;
  }
  const at::Tensor weights = attention.reshape({-1}).take(cache_->keys);  // [H, N]
  // Per query, the sum of its targets' weights: [B, H, T]. Added in the targets' order on every
  // device, so the same input gives the same sums bit for bit and shards merge exactly: index_add_
  // does so on the CPU (one thread), index_put_ with accumulation on a GPU (by sorting), where
  // index_add_ would use atomics in a varying order.
  at::Tensor sums;
  if (weights.device().is_cpu()) {
    sums = torch::zeros({heads, batch * length}, weights.options())
               .index_add_(/*dim=*/1, cache_->queries, weights)
               .view({heads, batch, length})
               .permute({1, 0, 2});
  } else {
    const c10::List<std::optional<at::Tensor>> rows{std::optional<at::Tensor>(cache_->queries)};
    sums = torch::zeros({batch * length, heads}, weights.options())
               .index_put_(rows, weights.t(), /*accumulate=*/true)
               .view({batch, length, heads})
               .permute({0, 2, 1});
  }
  means_.add(layer, sums, cache_->counted, context.sums);
}

}  // namespace headscan
