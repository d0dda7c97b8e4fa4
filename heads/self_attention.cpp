// self: mean A[i, i] over all queries.
#include <torch/torch.h>

#include "heads/mean_score.h"
#include "heads/registry.h"

namespace headscan {
namespace {

class SelfAttentionClassifier : public MeanScoreClassifier {
 public:
  SelfAttentionClassifier() : MeanScoreClassifier(HeadType{{{"self", "mean A[i,i]"}}}) {}

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    means_.add(layer, attention.diagonal(/*offset=*/0, /*dim1=*/-2, /*dim2=*/-1), context.queries, context.sums);
  }
};

}  // namespace

std::unique_ptr<HeadClassifier> make_self_attention_classifier() {
  return std::make_unique<SelfAttentionClassifier>();
}

}  // namespace headscan
