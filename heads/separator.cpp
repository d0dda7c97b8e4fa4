// separator and punctuation: the mean, over content queries i ≥ 1, of the attention on visible
// keys of one kind: special tokens at positions > 0 ([SEP], </s>, an end-of-text inside the
// sequence), or tokens whose text is only punctuation (analyzer/tokenizers/piece_text.h). Each with
// its chance level, the mean over the same queries of the share of visible keys of that kind.
// Labelled when the score > the threshold and ≥ chance + the margin, as rare-word is. Clark et al.
// 2019 ("What Does BERT Look At?") found heads of both kinds.
#include <algorithm>

#include <torch/torch.h>

#include "heads/baselined_score.h"
#include "heads/registry.h"
#include "heads/row_block.h"
#include "heads/row_summary.h"

namespace headscan {
namespace {

constexpr double kDefaultThreshold = 0.5;
constexpr double kDefaultMargin = 0.2;

enum class KeyKind { separator, punctuation };

HeadType key_kind_type(KeyKind kind) {
  if (kind == KeyKind::separator) {
    return {{{"separator", "mean attention on special tokens after position 0 ([SEP], </s>), over queries i ≥ 1"},
             {"separator_baseline", "chance level of separator: mean share of visible keys that are such tokens"}},
            "separator",
            {{"separator", kDefaultThreshold}, {"separator_margin", kDefaultMargin}},
            "Clark et al. 2019",
            "#EE8866",
            "sep",
            /*primary_rank=*/7};
  }
  return {{{"punctuation", "mean attention on tokens whose text is only punctuation, over queries i ≥ 1"},
           {"punctuation_baseline", "chance level of punctuation: mean share of visible keys that are punctuation"}},
          "punctuation",
          {{"punctuation", kDefaultThreshold}, {"punctuation_margin", kDefaultMargin}},
          "Clark et al. 2019",
          "#BBCC33",
          "punc",
          /*primary_rank=*/8};
}

// [B, T, 2] bool: the keys that are separators (special tokens after position 0) and those that are
// punctuation (non-special tokens whose text is only punctuation).
at::Tensor key_kinds(const BatchContext& context) {
  const at::Tensor& valid = context.valid;
  at::Tensor separators = context.special & valid;
  separators.select(/*dim=*/1, 0).fill_(false);
  const at::Tensor punctuation =
      context.punctuation != nullptr ? *context.punctuation & valid & ~context.special : at::zeros_like(valid);
  return at::stack({separators, punctuation}, /*dim=*/-1);
}

// [B, H, Q, 2]: each row's weight on the keys of each kind (keys it cannot see hold 0): one product
// [B, H, Q, T] · [B, 1, T, 2] reads the block once for both, shared through the row cache; no
// product at all when the batch has no key of either kind (`kinds` undefined).
at::Tensor key_kind_mass(const at::Tensor& attention, const at::Tensor& kinds) {
  const auto sizes = attention.sizes();
  if (!kinds.defined()) return at::zeros({sizes[0], sizes[1], sizes[2], 2}, attention.options());
  return at::matmul(attention, kinds.to(attention.scalar_type()).unsqueeze(1));
}

class KeyKindClassifier : public BaselinedScoreClassifier {
 public:
  explicit KeyKindClassifier(KeyKind kind) : BaselinedScoreClassifier(key_kind_type(kind)), kind_(kind) {}

  void begin(const ModelShape& shape) override {
    BaselinedScoreClassifier::begin(shape);
    cached_batch_ = -1;
  }

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    const RowBlock block = row_block(attention, context);
    const std::int64_t from = std::max<std::int64_t>(block.first, 1);  // content queries i ≥ 1
    if (from >= block.end()) return;
    if (context.batch_index != cached_batch_) prepare(context);
    auto compute = [&] { return key_kind_mass(attention, kinds_); };
    at::Tensor local;
    const at::Tensor& mass = context.rows != nullptr
                                 ? context.rows->shared(layer, attention, block.first, "key_kind_mass", compute)
                                 : (local = compute());
    const int column = kind_ == KeyKind::separator ? 0 : 1;
    means_.add(layer, positions(mass.select(/*dim=*/-1, column), from - block.first, block.rows),
               positions(context.queries, from, block.end()), context.sums);
  }

 private:
  // Once per batch: the keys of both kinds, and the chance level of this one over the content queries.
  void prepare(const BatchContext& context) {
    cached_batch_ = context.batch_index;
    const at::Tensor& valid = context.valid;  // [B, T]
    const at::Tensor kinds = key_kinds(context);
    kinds_ = kinds.any().item<bool>() ? kinds : at::Tensor();  // one wait for the device per batch
    const at::Tensor keys = kinds.select(/*dim=*/-1, kind_ == KeyKind::separator ? 0 : 1);  // [B, T] bool
    at::Tensor share;  // [B, T]: the share of each query's visible keys that are of the kind
    if (context.causal) {
      share = keys.to(at::kDouble).cumsum(/*dim=*/1) / valid.to(at::kDouble).cumsum(/*dim=*/1).clamp_min(1);
    } else {
      share = (keys.sum(/*dim=*/1, /*keepdim=*/true).to(at::kDouble) /
               valid.sum(/*dim=*/1, /*keepdim=*/true).to(at::kDouble).clamp_min(1))
                  .expand_as(valid);
    }
    baseline_.add(share.slice(/*dim=*/1, 1), context.queries.slice(/*dim=*/1, 1), context.sums);
  }

  KeyKind kind_;
  std::int64_t cached_batch_ = -1;
  at::Tensor kinds_;  // [B, T, 2] bool: key_kinds(); undefined when the batch has no key of either kind
};

}  // namespace

std::unique_ptr<HeadClassifier> make_separator_classifier() {
  return std::make_unique<KeyKindClassifier>(KeyKind::separator);
}
std::unique_ptr<HeadClassifier> make_punctuation_classifier() {
  return std::make_unique<KeyKindClassifier>(KeyKind::punctuation);
}

}  // namespace headscan
