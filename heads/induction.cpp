// induction: on probe sequences BOS + R R R R, the attention of each query in repeats 2..4 to
// the token right after each earlier occurrence of its token, sum_s A[i, s+1] (prefix matching,
// Olsson et al. 2022; Bansal et al. 2023). Labelled on causal models only.
#include "heads/registry.h"
#include "heads/repeats.h"

namespace headscan {
namespace {

class InductionClassifier : public TargetAttentionClassifier {
 public:
  InductionClassifier()
      : TargetAttentionClassifier(
            HeadType{{{"induction",
                       "probes [BOS] R R R R: mean weight on the token after earlier occurrences of the query's token"}},
                     "induction",
                     {{"induction", 0.4}},
                     "Olsson et al. 2022; Bansal et al. 2023",
                     "#CC6677",
                     "ind",
                     /*primary_rank=*/1,
                     /*causal_only=*/true},
            LabelRule{}, BatchSource::probe) {}

 protected:
  at::Tensor targets(const BatchContext& context, std::int64_t first_row, std::int64_t rows) const override {
    return induction_targets(earlier_occurrences(context, first_row, rows), first_row);
  }
};

}  // namespace

std::unique_ptr<HeadClassifier> make_induction_classifier() { return std::make_unique<InductionClassifier>(); }

}  // namespace headscan
