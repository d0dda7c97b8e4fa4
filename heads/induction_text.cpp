// induction_text: the induction measure on the corpus itself. Over queries whose token occurred
// earlier at s < i - 1, the mean of sum_s A[i, s+1]. Reported, not labelled.
#include "heads/registry.h"
#include "heads/repeats.h"

namespace headscan {
namespace {

class InductionTextClassifier : public TargetAttentionClassifier {
 public:
  InductionTextClassifier()
      : TargetAttentionClassifier(
            HeadType{{{"induction_text",
                       "corpus: mean weight on the token after earlier occurrences of the query's token"}}}) {}

 protected:
  at::Tensor targets(const BatchContext& context, std::int64_t first_row, std::int64_t rows) const override {
    return induction_targets(earlier_occurrences(context, first_row, rows), first_row);
  }
};

}  // namespace

std::unique_ptr<HeadClassifier> make_induction_text_classifier() {
  return std::make_unique<InductionTextClassifier>();
}

}  // namespace headscan
