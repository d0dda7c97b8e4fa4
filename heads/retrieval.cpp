// retrieval (causal models with logits): on needle probes (analyzer/run/sequences/needles.h),
// haystacks of the corpus's own text with a needle of distinct random tokens inside and the whole
// needle again at the end, a copy event is a query at final-needle token k (k ≥ 1) where the
// model's top prediction is needle token k + 1; a head hits when its argmax key is the inserted
// needle's token k + 1. retrieval = hits / copy events (Wu et al. 2024, "Retrieval Head
// Mechanistically Explains Long-Context Factuality"), null with fewer than kMinimumCopyEvents
// events; labelled `retrieval` when ≥ the threshold (0.1, their threshold).
#include <cmath>

#include <torch/torch.h>

#include "heads/mean_score.h"
#include "heads/registry.h"
#include "heads/row_summary.h"

namespace headscan {
namespace {

class RetrievalClassifier : public MeanScoreClassifier {
 public:
  RetrievalClassifier()
      : MeanScoreClassifier(HeadType{{{"retrieval",
                                       "needle probes: share of the model's copy events where the head's argmax key is "
                                       "the needle token copied"}},
                                     "retrieval",
                                     {{"retrieval", 0.1}},
                                     "Wu et al. 2024",
                                     "#AA4499",
                                     "retr",
                                     /*primary_rank=*/2,
                     /*causal_only=*/true},
                            LabelRule{}, BatchSource::needle) {}

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    if (context.needle_targets == nullptr) return;
    // The block's queries of the copy events' targets [B, T]: [B, Q].
    const at::Tensor targets = context.needle_targets->narrow(/*dim=*/1, context.first_row, attention.size(2));
    RowSummary local;
    const at::Tensor& argmax = row_summary(layer, attention, context, local).argmax;  // [B, H, Q]
    const at::Tensor hits = (argmax == targets.unsqueeze(1)).to(at::kFloat);
    means_.add(layer, hits, targets >= 0, context.sums);
  }

  void finalize(int layer, int head, const Thresholds& thresholds, HeadVerdict& verdict) const override {
    if (means_.count(layer) < kMinimumCopyEvents) {
      put_score(verdict.scores, "retrieval", std::nan(""));
      return;
    }
    MeanScoreClassifier::finalize(layer, head, thresholds, verdict);
  }
};

}  // namespace

std::unique_ptr<HeadClassifier> make_retrieval_classifier() { return std::make_unique<RetrievalClassifier>(); }

}  // namespace headscan
