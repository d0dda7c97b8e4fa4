// self: mean A[i, i] over all queries.
#include <torch/torch.h>

#include "heads/mean_score.h"
#include "heads/registry.h"
#include "heads/row_block.h"

namespace headscan {
namespace {

class SelfAttentionClassifier : public MeanScoreClassifier {
 public:
  SelfAttentionClassifier() : MeanScoreClassifier(HeadType{{{"self", "mean A[i,i]"}}}) {}

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    const OffsetWeights self = weights_at_offset(attention, row_block(attention, context), /*offset=*/0);
    if (self.empty()) return;
    means_.add(layer, self.weights, positions(context.queries, self.from, self.to), context.sums);
  }
};

}  // namespace

std::unique_ptr<HeadClassifier> make_self_attention_classifier() {
  return std::make_unique<SelfAttentionClassifier>();
}

}  // namespace headscan
