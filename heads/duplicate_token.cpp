// duplicate_token: on the probe sequences, the attention of each query in repeats 2..4 to the
// earlier occurrences of its own token, sum_s A[i, s] (TransformerLens' duplicate-token heads).
// Labelled on causal models only.
#include "heads/registry.h"
#include "heads/repeats.h"

namespace headscan {
namespace {

class DuplicateTokenClassifier : public TargetAttentionClassifier {
 public:
  DuplicateTokenClassifier()
      : TargetAttentionClassifier(
            HeadType{{{"duplicate_token", "probes: mean weight on earlier occurrences of the query's token"}},
                     "duplicate-token",
                     {{"duplicate_token", 0.4}},
                     "TransformerLens",
                     "#882255",
                     "dup",
                     /*primary_rank=*/3,
                     /*causal_only=*/true},
            LabelRule{}, BatchSource::probe) {}

 protected:
  at::Tensor targets(const BatchContext& context, std::int64_t first_row, std::int64_t rows) const override {
    return earlier_occurrences(context, first_row, rows);
  }
};

}  // namespace

std::unique_ptr<HeadClassifier> make_duplicate_token_classifier() {
  return std::make_unique<DuplicateTokenClassifier>();
}

}  // namespace headscan
