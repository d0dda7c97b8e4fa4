// previous_token: mean A[i, i-1] over content queries i >= 1 (Olsson et al. 2022).
#include <torch/torch.h>

#include "heads/mean_score.h"
#include "heads/registry.h"

namespace headscan {
namespace {

class PreviousTokenClassifier : public MeanScoreClassifier {
 public:
  PreviousTokenClassifier()
      : MeanScoreClassifier(HeadType{{{"previous_token", "mean A[i,i-1] over queries i ≥ 1"}},
                                     "previous-token",
                                     {{"previous_token", 0.5}},
                                     "Olsson et al. 2022",
                                     "#332288",
                                     "prev",
                                     /*primary_rank=*/4}) {}

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    if (attention.size(-1) < 2) return;
    // diagonal(-1) holds A[i, i-1] for i = 1 .. T-1.
    means_.add(layer, attention.diagonal(/*offset=*/-1, /*dim1=*/-2, /*dim2=*/-1), context.queries.slice(1, 1), context.sums);
  }
};

}  // namespace

std::unique_ptr<HeadClassifier> make_previous_token_classifier() {
  return std::make_unique<PreviousTokenClassifier>();
}

}  // namespace headscan
