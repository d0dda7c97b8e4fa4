// syntactic: per dependency relation and direction, how often the word a head attends to most is
// the relation's other end, against the most common word offset (Clark et al. 2019, §4.2; Voita et
// al. 2019, §5.2; DESIGN.md, "Syntactic heads"). Label "syntactic" when any relation passes.
#include "heads/syntactic.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "heads/registry.h"
#include "heads/relation_accuracy.h"
#include "heads/saved_statistics.h"
#include "analyzer/corpus/sequence_words.h"

namespace headscan {

at::Tensor predicted_words(const at::Tensor& attention, const at::Tensor& token_word, std::int64_t words,
                           const std::vector<std::int64_t>& word_counts) {
  TORCH_CHECK(attention.dim() == 4, "attention must be [B,H,T,T], got ", attention.sizes());
  TORCH_CHECK(token_word.dim() == 2 && token_word.size(0) == attention.size(0) && token_word.size(1) == attention.size(2),
              "token_word must be [B,T] for attention ", attention.sizes(), ", got ", token_word.sizes());
  const std::int64_t batch = attention.size(0);
  const std::int64_t heads = attention.size(1);
  const std::int64_t length = attention.size(2);
  // Slot `words` collects the tokens of no word; it is dropped below.
  const at::Tensor keys = token_word.view({batch, 1, 1, length}).expand({batch, heads, length, length});
  const at::Tensor to_words =
      torch::zeros({batch, heads, length, words + 1}, attention.options()).scatter_add_(/*dim=*/3, keys, attention);
  const at::Tensor queries = token_word.view({batch, 1, length, 1}).expand({batch, heads, length, words + 1});
  // Sums over a word's rows: the mean's divisor is the same along a row, so the argmax is too.
  at::Tensor word_attention =
      torch::zeros({batch, heads, words + 1, words + 1}, attention.options()).scatter_add_(/*dim=*/2, queries, to_words);
  word_attention = word_attention.narrow(/*dim=*/2, 0, words).narrow(/*dim=*/3, 0, words);

  const at::Tensor count = torch::tensor(word_counts, torch::kInt64).view({batch, 1, 1, 1});
  const at::Tensor column = torch::arange(words, torch::kInt64);
  const at::Tensor excluded = (column.view({1, 1, 1, words}) >= count) |
                              (column.view({1, 1, words, 1}) == column.view({1, 1, 1, words}));
  return word_attention.masked_fill(excluded, -std::numeric_limits<float>::infinity()).argmax(/*dim=*/-1);
}

namespace {

constexpr double kDefaultMargin = 0.10;
constexpr double kDefaultSupport = 20;

struct ArcQuery {
  std::int64_t sequence;
  int query;
  int target;
  const std::string* relation;
  ArcDirection direction;
};

class SyntacticClassifier : public HeadClassifier {
 public:
  HeadType type() const override {
    return {{{"syntactic", "best accuracy − baseline over dependency relations (Clark et al. 2019)"}},
            "syntactic",
            {{"syntactic", kDefaultMargin}, {"syntactic_support", kDefaultSupport}},
            "Clark et al. 2019 §4.2; Voita et al. 2019",
            "#117733",
            "syn",
            /*primary_rank=*/4};
  }
  bool wants_parses() const override { return true; }

  void begin(const ModelShape& shape) override {
    statistics_.begin(shape.layers, shape.heads);
    cached_batch_ = -1;
  }

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    if (context.source != BatchSource::corpus || context.words == nullptr) return;
    if (context.batch_index != cached_batch_) prepare(context, attention.size(2));
    if (arcs_.empty()) return;
    const at::Tensor predicted = predicted_words(attention, token_word_, words_, word_counts_).contiguous();
    const auto best = predicted.accessor<std::int64_t, 3>();
    const std::int64_t heads = attention.size(1);
    for (const ArcQuery& arc : arcs_) {
      for (std::int64_t head = 0; head < heads; ++head) {
        if (best[arc.sequence][head][arc.query] == arc.target) {
          statistics_.add_correct(*arc.relation, arc.direction, layer, static_cast<int>(head));
        }
      }
    }
  }

  nlohmann::json save() const override { return statistics_.save(); }
  void merge(const nlohmann::json& saved) override { statistics_.merge(saved, saved_statistics_path(name())); }

  void finalize(int layer, int head, const Thresholds& thresholds, HeadVerdict& verdict) const override {
    const double margin = thresholds.at("syntactic");
    const auto support = static_cast<std::int64_t>(std::ceil(thresholds.at("syntactic_support")));
    nlohmann::ordered_json table = nlohmann::ordered_json::object();
    bool passed = false;
    for (const RelationResult& result : statistics_.results(layer, head, margin, support)) {
      const auto rounded = [](double value) { return std::round(value * 1e6) / 1e6; };
      table[result.relation] = {{"direction", direction_name(result.direction)},
                                {"accuracy", rounded(result.accuracy)},
                                {"baseline", rounded(result.baseline)},
                                {"baseline_offset", result.baseline_offset},
                                {"support", result.support},
                                {"passed", result.passed}};
      passed = passed || result.passed;
    }
    verdict.scores["syntactic"] = std::move(table);
    if (passed) verdict.labels.push_back("syntactic");
  }

 private:
  // Once per batch: the token → word map as a tensor, and the arcs whose target the query sees,
  // counted into the head-independent support and offset statistics.
  void prepare(const BatchContext& context, std::int64_t length) {
    cached_batch_ = context.batch_index;
    arcs_.clear();
    const auto& sequences = *context.words;
    const auto batch = static_cast<std::int64_t>(sequences.size());
    words_ = 1;
    for (const SequenceWords* words : sequences) {
      if (words != nullptr) words_ = std::max<std::int64_t>(words_, words->words);
    }
    std::vector<std::int64_t> token_word(static_cast<std::size_t>(batch * length), words_);
    word_counts_.assign(static_cast<std::size_t>(batch), 0);
    for (std::int64_t b = 0; b < batch; ++b) {
      const SequenceWords* words = sequences[static_cast<std::size_t>(b)];
      if (words == nullptr) continue;
      word_counts_[static_cast<std::size_t>(b)] = words->words;
      for (std::size_t position = 0; position < words->token_word.size(); ++position) {
        if (words->token_word[position] >= 0) {
          token_word[static_cast<std::size_t>(b * length) + position] = words->token_word[position];
        }
      }
      for (const WordArc& arc : words->arcs) {
        add_query(b, arc.dependent, arc.head, arc, ArcDirection::d2h, arc.offset, context.causal);
        add_query(b, arc.head, arc.dependent, arc, ArcDirection::h2d, -arc.offset, context.causal);
      }
    }
    token_word_ = torch::tensor(token_word, torch::kInt64).view({batch, length});
  }

  // Causal models: the target word must end before the query word begins.
  void add_query(std::int64_t sequence, int query, int target, const WordArc& arc, ArcDirection direction,
                 int offset, bool causal) {
    if (causal && target > query) return;
    arcs_.push_back(ArcQuery{sequence, query, target, &arc.relation, direction});
    statistics_.add_arc(arc.relation, direction, offset);
  }

  RelationAccuracy statistics_;
  std::int64_t cached_batch_ = -1;
  at::Tensor token_word_;  // [B, T]
  std::int64_t words_ = 1;
  std::vector<std::int64_t> word_counts_;
  std::vector<ArcQuery> arcs_;  // point into the batch's SequenceWords, valid during the batch
};

}  // namespace

std::unique_ptr<HeadClassifier> make_syntactic_classifier() { return std::make_unique<SyntacticClassifier>(); }

}  // namespace headscan
