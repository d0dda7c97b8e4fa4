// rare_word: idf(t) = ln((N+1)/(df(t)+1)) + 1 over the corpus (documents = lines, special tokens
// excluded); over queries with at least 3 visible non-special keys, not all of them of maximal
// idf, the share whose argmax key holds a visible token of maximal idf. rare_word_baseline: the
// mean over the same queries of the share of visible non-special keys of maximal idf, what an
// argmax falling on a random key would score. Labelled when rare_word > `rare_word` and
// rare_word ≥ baseline + `rare_word_margin`: in a small corpus most keys tie at the maximal idf
// and an argmax lands on one by chance. Voita et al. 2019, "rare words" heads.
#include <torch/torch.h>

#include "heads/baselined_score.h"
#include "heads/registry.h"
#include "heads/row_block.h"
#include "heads/row_summary.h"

namespace headscan {
namespace {

constexpr std::int64_t kMinimumKeys = 3;
constexpr double kDefaultThreshold = 0.5;
constexpr double kDefaultMargin = 0.2;

class RareWordClassifier : public BaselinedScoreClassifier {
 public:
  RareWordClassifier() : BaselinedScoreClassifier(description()) {}

  static HeadType description() {
    return {{{"rare_word",
              "share of queries whose argmax key is a visible token of maximal idf (queries whose visible keys do not "
              "all tie at the maximum)"},
             {"rare_word_baseline", "chance level of rare_word: mean share of visible keys of maximal idf, same queries"}},
            "rare-word",
            {{"rare_word", kDefaultThreshold}, {"rare_word_margin", kDefaultMargin}},
            "Voita et al. 2019",
            "#DDCC77",
            "rare",
            /*primary_rank=*/6};
  }

  void begin(const ModelShape& shape) override {
    BaselinedScoreClassifier::begin(shape);
    cached_batch_ = -1;
  }

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    if (context.batch_index != cached_batch_) prepare(context);
    const RowBlock block = row_block(attention, context);
    RowSummary local;
    const at::Tensor& argmax = row_summary(layer, attention, context, local).argmax;  // [B, H, Q]: key positions
    const at::Tensor idf = context.idf.unsqueeze(1).expand({-1, attention.size(1), -1});  // [B, H, T]
    const at::Tensor attended_idf = idf.gather(/*dim=*/2, argmax);
    const at::Tensor hit = (attended_idf == block_rows(best_idf_, block).unsqueeze(1)) & attended_idf.isfinite();
    means_.add(layer, hit.to(attention.scalar_type()), block_rows(counted_, block), context.sums);
  }

 private:
  // Once per batch, since none of it depends on the layer or head: the maximal idf each query
  // sees, which queries count, and their chance level, added to the baseline.
  void prepare(const BatchContext& context) {
    cached_batch_ = context.batch_index;
    // context.idf is -inf on special tokens and padding, so neither can hold the maximum.
    const at::Tensor& idf = context.idf;                       // [B, T]
    const at::Tensor content = context.valid & ~context.special;  // [B, T]
    at::Tensor content_keys;  // [B, T]: non-special keys visible to each query
    at::Tensor best_keys;     // [B, T]: those of them that hold the maximal idf
    if (context.causal) {
      best_idf_ = std::get<0>(idf.cummax(/*dim=*/1));
      content_keys = content.to(torch::kInt64).cumsum(/*dim=*/1);
      // A key j ≤ i of maximal idf for query i also holds the running maximum at j, and the
      // running maximum stays the same from j to i: count the keys at the running maximum since
      // it last rose. O(B·T).
      const at::Tensor at_maximum = (content & (idf == best_idf_)).to(torch::kInt64);
      const at::Tensor through = at_maximum.cumsum(/*dim=*/1);
      at::Tensor rose = torch::ones_like(content);
      rose.slice(/*dim=*/1, 1).copy_(best_idf_.slice(/*dim=*/1, 1) != best_idf_.slice(/*dim=*/1, 0, -1));
      const at::Tensor before_rise = torch::where(rose, through - at_maximum, torch::zeros_like(through));
      best_keys = through - std::get<0>(before_rise.cummax(/*dim=*/1));
    } else {
      best_idf_ = std::get<0>(idf.max(/*dim=*/1, /*keepdim=*/true)).expand_as(idf);
      content_keys = content.sum(/*dim=*/1, /*keepdim=*/true).expand_as(content);
      best_keys = (content & (idf == best_idf_)).sum(/*dim=*/1, /*keepdim=*/true).expand_as(content);
    }
    counted_ = context.queries & (content_keys >= kMinimumKeys) & (best_keys < content_keys);
    baseline_.add(best_keys.to(torch::kDouble) / content_keys.clamp_min(1).to(torch::kDouble), counted_,
                  context.sums);
  }

  std::int64_t cached_batch_ = -1;
  at::Tensor best_idf_;  // [B, T]: maximal idf among the keys visible to each query
  at::Tensor counted_;   // [B, T] bool: the queries that count
};

}  // namespace

std::unique_ptr<HeadClassifier> make_rare_word_classifier() { return std::make_unique<RareWordClassifier>(); }

}  // namespace headscan
