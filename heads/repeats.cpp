#include "heads/repeats.h"

#include <torch/torch.h>

namespace headscan {

at::Tensor earlier_occurrences(const BatchContext& context) {
  const at::Tensor content = context.valid & ~context.special;                            // [B, T]
  const at::Tensor same = context.token_ids.unsqueeze(2) == context.token_ids.unsqueeze(1);  // [B, T, T]
  const std::int64_t length = context.token_ids.size(1);
  const at::Tensor before = torch::ones({length, length}, torch::kBool).tril(/*diagonal=*/-1);
  return same & before & content.unsqueeze(2) & content.unsqueeze(1);
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

struct TargetAttentionClassifier::Cache {
  BatchSource source = BatchSource::corpus;
  std::int64_t batch_index = -1;
  at::Tensor targets;  // [B, 1, T, T] float
  at::Tensor counted;  // [B, T] bool
};

void TargetAttentionClassifier::observe(int layer, const at::Tensor& attention, const BatchContext& context) {
  if (!cache_) cache_ = std::make_shared<Cache>();
  if (cache_->batch_index != context.batch_index || cache_->source != context.source) {
    const at::Tensor batch_targets = targets(context);
    cache_->source = context.source;
    cache_->batch_index = context.batch_index;
    cache_->targets = batch_targets.unsqueeze(1).to(attention.scalar_type());
    cache_->counted = batch_targets.any(/*dim=*/-1);
  }
  means_.add(layer, (attention * cache_->targets).sum(/*dim=*/-1), cache_->counted);
}

}  // namespace headscan
