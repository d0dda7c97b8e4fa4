// first_token: mean A[i, 0] over content queries i >= 1 (Clark et al. 2019; attention sinks).
#include <torch/torch.h>

#include "heads/mean_score.h"
#include "heads/registry.h"

namespace headscan {
namespace {

class FirstTokenClassifier : public MeanScoreClassifier {
 public:
  FirstTokenClassifier() : MeanScoreClassifier(HeadType{{{"first_token", "mean A[i,0] over queries i ≥ 1"}},
                                                       "first-token",
                                                       {{"first_token", 0.6}},
                                                       "Clark et al. 2019; attention sinks (Xiao et al. 2023)",
                                                       "#44AA99",
                                                       "first",
                                                       /*primary_rank=*/10}) {}

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    if (attention.size(-1) < 2) return;
    means_.add(layer, attention.select(/*dim=*/-1, 0).slice(/*dim=*/-1, 1), context.queries.slice(1, 1), context.sums);
  }
};

}  // namespace

std::unique_ptr<HeadClassifier> make_first_token_classifier() {
  return std::make_unique<FirstTokenClassifier>();
}

}  // namespace headscan
