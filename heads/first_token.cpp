// first_token: mean A[i, 0] over content queries i >= 1 (Clark et al. 2019; attention sinks).
#include <algorithm>

#include <torch/torch.h>

#include "heads/mean_score.h"
#include "heads/registry.h"
#include "heads/row_block.h"

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
    // A[i, 0] for the block's queries i ≥ 1.
    const RowBlock block = row_block(attention, context);
    const std::int64_t from = std::max<std::int64_t>(block.first, 1);
    if (from >= block.end()) return;
    means_.add(layer, positions(attention.select(/*dim=*/-1, 0), from - block.first, block.rows),
               positions(context.queries, from, block.end()), context.sums);
  }
};

}  // namespace

std::unique_ptr<HeadClassifier> make_first_token_classifier() {
  return std::make_unique<FirstTokenClassifier>();
}

}  // namespace headscan
