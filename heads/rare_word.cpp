// rare_word: over queries with at least 3 visible non-special keys, the share whose argmax key
// holds a visible token of maximal idf, idf(t) = ln((N+1)/(df(t)+1)) + 1 over the corpus
// (documents = lines, special tokens excluded). Voita et al. 2019, "rare words" heads.
#include <torch/torch.h>

#include "heads/mean_score.h"
#include "heads/registry.h"
#include "heads/row_summary.h"

namespace headscan {
namespace {

constexpr std::int64_t kMinimumKeys = 3;

class RareWordClassifier : public MeanScoreClassifier {
 public:
  RareWordClassifier()
      : MeanScoreClassifier(HeadType{{{"rare_word", "share of queries whose argmax key is a visible token of maximal idf"}},
                                     "rare-word",
                                     {{"rare_word", 0.5}},
                                     "Voita et al. 2019",
                                     "#DDCC77",
                                     "rare",
                                     /*primary_rank=*/5},
                            LabelRule{/*strict=*/true}) {}

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    // context.idf is -inf on special tokens and padding, so neither can hold the maximum.
    const at::Tensor content = (context.valid & ~context.special).to(torch::kInt64);  // [B, T]
    at::Tensor best_idf;   // [B, T]: maximal idf among keys visible to each query
    at::Tensor content_keys;  // [B, T]: non-special keys visible to each query
    if (context.causal) {
      best_idf = std::get<0>(context.idf.cummax(/*dim=*/1));
      content_keys = content.cumsum(/*dim=*/1);
    } else {
      best_idf = std::get<0>(context.idf.max(/*dim=*/1, /*keepdim=*/true)).expand_as(context.idf);
      content_keys = content.sum(/*dim=*/1, /*keepdim=*/true).expand_as(content);
    }
    RowSummary local;
    const at::Tensor& argmax = row_summary(layer, attention, context, local).argmax;  // [B, H, T]
    const at::Tensor idf = context.idf.unsqueeze(1).expand({-1, attention.size(1), -1});
    const at::Tensor attended_idf = idf.gather(/*dim=*/2, argmax);
    const at::Tensor hit = (attended_idf == best_idf.unsqueeze(1)) & attended_idf.isfinite();
    means_.add(layer, hit.to(attention.scalar_type()), context.valid & (content_keys >= kMinimumKeys));
  }
};

}  // namespace

std::unique_ptr<HeadClassifier> make_rare_word_classifier() { return std::make_unique<RareWordClassifier>(); }

}  // namespace headscan
