// entropy: mean normalized attention entropy -sum_j A log A / log(n_i), n_i = keys visible to
// query i (the suffix included), over queries with n_i >= 2 (Clark et al. 2019). Label "broad".
#include <torch/torch.h>

#include "heads/mean_score.h"
#include "heads/registry.h"
#include "heads/row_block.h"
#include "heads/row_summary.h"
#include "heads/statistic_limits.h"

namespace headscan {
namespace {

class EntropyClassifier : public MeanScoreClassifier {
 public:
  EntropyClassifier() : MeanScoreClassifier(HeadType{{{"entropy", "mean normalized entropy of a query's attention"}},
                                                  "broad",
                                                  {{"entropy", 0.8}},
                                                  "Clark et al. 2019",
                                                  "#999933",
                                                  "broad",
                                                  /*primary_rank=*/12}) {}

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    const RowBlock block = row_block(attention, context);
    at::Tensor visible;  // [B, Q]: n_i of the block's queries i
    if (context.causal) {
      visible = torch::arange(block.first + 1, block.end() + 1, attention.options()).expand({attention.size(0), block.rows});
    } else {
      visible = context.valid.sum(/*dim=*/1, /*keepdim=*/true, attention.scalar_type()).expand({-1, block.rows});
    }
    RowSummary local;
    const at::Tensor& entropy = row_summary(layer, attention, context, local).entropy;  // [B, H, Q]
    const at::Tensor normalizer = visible.clamp_min(2).log().unsqueeze(1);
    means_.add(layer, entropy / normalizer, block_rows(context.queries, block) & (visible >= 2), context.sums,
               kMaxNormalizedEntropy);
  }
};

}  // namespace

std::unique_ptr<HeadClassifier> make_entropy_classifier() {
  return std::make_unique<EntropyClassifier>();
}

}  // namespace headscan
