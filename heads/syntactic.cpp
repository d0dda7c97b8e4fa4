// syntactic: per dependency relation and direction, how often the word a head attends to most is
// the relation's other end, against the most common word offset (Clark et al. 2019, §4.2; Voita et
// al. 2019, §5.2; DESIGN.md, "Syntactic heads"). Label "syntactic" when any relation passes.
// Words sharing tokens (a multiword token's) are one local word (SequenceWords): a prediction is
// right when it is the target's local word, and arcs inside one are not in the batch's arcs.
#include "heads/syntactic.h"

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "heads/device_sums.h"
#include "heads/registry.h"
#include "heads/relation_accuracy.h"
#include "heads/row_block.h"
#include "heads/row_summary.h"
#include "heads/saved_statistics.h"
#include "analyzer/corpus/sequence_words.h"

namespace headscan {

namespace {

// [B, 1, T, W]: token t belongs to word w (tokens of no word hold `words`, in no column).
at::Tensor word_membership(const at::Tensor& token_word, std::int64_t words, c10::ScalarType type) {
  const at::Tensor column = torch::arange(words, token_word.options());
  return token_word.unsqueeze(-1).eq(column).to(type).unsqueeze(1);
}

// The word attention of a few heads' block [B, h, Q, T] from row first_row: [B, h, W, W].
at::Tensor word_attention_of(const at::Tensor& block, const at::Tensor& membership, std::int64_t first_row) {
  const at::Tensor to_words = torch::matmul(block, membership);  // [B, h, Q, W]: sums over a word's columns
  // Sums over the block's rows of a word: the mean's divisor is the same along a row, so the argmax is too.
  const at::Tensor rows = membership.narrow(/*dim=*/2, first_row, block.size(2));  // [B, 1, Q, W]
  return torch::matmul(rows.transpose(-2, -1), to_words);                          // [B, h, W, W]
}

// Heads per chunk of a block [B, H, Q, T] whose [B, h, Q, W] products stay near kSummaryChunkElements.
std::int64_t heads_per_chunk(const at::Tensor& attention, std::int64_t words) {
  const std::int64_t per_head = std::max<std::int64_t>(1, attention.size(0) * attention.size(2) * words);
  return std::max<std::int64_t>(1, kSummaryChunkElements / per_head);
}

void check_word_inputs(const at::Tensor& attention, const at::Tensor& token_word) {
  TORCH_CHECK(attention.dim() == 4, "attention must be [B,H,Q,T], got ", attention.sizes());
  TORCH_CHECK(token_word.dim() == 2 && token_word.size(0) == attention.size(0) && token_word.size(1) == attention.size(3),
              "token_word must be [B,T] for attention ", attention.sizes(), ", got ", token_word.sizes());
}

}  // namespace

at::Tensor most_attended_words(const at::Tensor& word_attention, const at::Tensor& word_counts) {
  TORCH_CHECK(word_attention.dim() == 4 && word_attention.size(2) == word_attention.size(3),
              "word attention must be [B,H,W,W], got ", word_attention.sizes());
  TORCH_CHECK(word_counts.dim() == 1 && word_counts.size(0) == word_attention.size(0),
              "word_counts must be [B] for word attention ", word_attention.sizes(), ", got ", word_counts.sizes());
  const std::int64_t batch = word_attention.size(0);
  const std::int64_t words = word_attention.size(3);
  const at::Tensor column = torch::arange(words, word_counts.options());
  const at::Tensor excluded = (column.view({1, 1, 1, words}) >= word_counts.view({batch, 1, 1, 1})) |
                              (column.view({1, 1, words, 1}) == column.view({1, 1, 1, words}));
  return word_attention.masked_fill(excluded, -std::numeric_limits<float>::infinity()).argmax(-1);
}

at::Tensor word_attention(const at::Tensor& attention, const at::Tensor& token_word, std::int64_t words,
                          std::int64_t first_row) {
  check_word_inputs(attention, token_word);
  const RowBlock block = row_block(attention, first_row);
  const at::Tensor membership = word_membership(token_word, words, attention.scalar_type());
  const std::int64_t heads = attention.size(1);
  const std::int64_t chunk = heads_per_chunk(attention, words);
  std::vector<at::Tensor> parts;
  for (std::int64_t first = 0; first < heads; first += chunk) {
    parts.push_back(word_attention_of(attention.narrow(1, first, std::min(chunk, heads - first)), membership, block.first));
  }
  return parts.size() == 1 ? parts.front() : torch::cat(parts, /*dim=*/1);
}

at::Tensor predicted_words(const at::Tensor& attention, const at::Tensor& token_word, std::int64_t words,
                           const at::Tensor& word_counts) {
  check_word_inputs(attention, token_word);
  TORCH_CHECK(attention.size(2) == attention.size(3), "attention must be [B,H,T,T], got ", attention.sizes());
  const at::Tensor membership = word_membership(token_word, words, attention.scalar_type());
  // A few heads at a time: [B, h, T, W] is nearly the size of their attention.
  const std::int64_t heads = attention.size(1);
  const std::int64_t chunk = heads_per_chunk(attention, words);
  std::vector<at::Tensor> predicted;
  for (std::int64_t first = 0; first < heads; first += chunk) {
    const at::Tensor slice = attention.narrow(1, first, std::min(chunk, heads - first));
    predicted.push_back(most_attended_words(word_attention_of(slice, membership, /*first_row=*/0), word_counts));
  }
  return predicted.size() == 1 ? predicted.front() : torch::cat(predicted, /*dim=*/1);
}

namespace {

constexpr double kDefaultMargin = 0.10;
constexpr double kDefaultSupport = 20;

// The arcs of one batch grouped by relation and direction: the counts of right predictions are
// summed per group on the device.
struct ArcGroup {
  std::string relation;
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
            /*primary_rank=*/5};
  }
  bool wants_parses() const override { return true; }

  void begin(const ModelShape& shape) override {
    statistics_.begin(shape.layers, shape.heads);
    cached_batch_ = -1;
    summed_ = at::Tensor();
    summed_layer_ = -1;
  }

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    if (context.source != BatchSource::corpus || context.words == nullptr) return;
    const RowBlock block = row_block(attention, context);
    if (context.batch_index != cached_batch_) prepare(context, block.length, attention.device());
    if (groups_.empty()) return;
    const std::int64_t heads = attention.size(1);
    at::Tensor predicted;  // [B, H, W]
    if (block.first == 0 && block.last()) {
      predicted = predicted_words(attention, token_word_, words_, word_counts_);
    } else {
      // A query word's tokens may straddle blocks: its word attention is summed over the layer's
      // blocks and scored after the last.
      const at::Tensor part = word_attention(attention, token_word_, words_, block.first);
      TORCH_CHECK(block.first == 0 || layer == summed_layer_, "row blocks of layer ", layer,
                  " must start at row 0 and follow each other, got a block from row ", block.first);
      if (block.first == 0) {
        summed_ = part;
      } else {
        summed_.add_(part);
      }
      summed_layer_ = layer;
      if (!block.last()) return;
      predicted = most_attended_words(summed_, word_counts_);
      summed_ = at::Tensor();
      summed_layer_ = -1;
    }
    // [A, H]: each arc's query word's prediction, per head, against the arc's target.
    const at::Tensor per_arc = predicted.permute({0, 2, 1}).reshape({-1, heads}).index_select(0, arc_query_);
    const at::Tensor right = per_arc.eq(arc_target_.unsqueeze(1)).to(at::kDouble);
    const auto groups = static_cast<std::int64_t>(groups_.size());
    // Whole numbers: exact in any order of addition, on any device.
    const at::Tensor counts = torch::zeros({groups, heads}, right.options()).index_add_(0, arc_group_, right);
    add_or_receive(context.sums, counts.flatten(), [this, layer, heads, groups = groups_](const double* data, std::int64_t) {
      for (std::size_t group = 0; group < groups.size(); ++group) {
        for (std::int64_t head = 0; head < heads; ++head) {
          const auto arcs = static_cast<std::int64_t>(data[static_cast<std::int64_t>(group) * heads + head]);
          if (arcs > 0) {
            statistics_.add_correct(groups[group].relation, groups[group].direction, layer, static_cast<int>(head), arcs);
          }
        }
      }
    });
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
  // Once per batch: the token → word map and the arcs whose target the query sees, as tensors on
  // the attention's device; the arcs are counted into the head-independent support and offsets.
  void prepare(const BatchContext& context, std::int64_t length, const c10::Device& device) {
    cached_batch_ = context.batch_index;
    groups_.clear();
    summed_ = at::Tensor();
    summed_layer_ = -1;
    const auto& sequences = *context.words;
    const auto batch = static_cast<std::int64_t>(sequences.size());
    words_ = 1;
    for (const SequenceWords* words : sequences) {
      if (words != nullptr) words_ = std::max<std::int64_t>(words_, words->words);
    }
    std::vector<std::int64_t> token_word(static_cast<std::size_t>(batch * length), words_);
    std::vector<std::int64_t> word_counts(static_cast<std::size_t>(batch), 0);
    std::vector<std::int64_t> arc_query, arc_target, arc_group;
    std::map<std::pair<std::string, ArcDirection>, std::int64_t> group_of;
    const auto add_query = [&](std::int64_t sequence, int query, int target, const WordArc& arc, ArcDirection direction,
                               int offset) {
      if (context.causal && target > query) return;  // causal models: the target ends before the query begins
      const auto [found, added] = group_of.try_emplace({arc.relation, direction}, static_cast<std::int64_t>(groups_.size()));
      if (added) groups_.push_back(ArcGroup{arc.relation, direction});
      arc_query.push_back(sequence * words_ + query);
      arc_target.push_back(target);
      arc_group.push_back(found->second);
      statistics_.add_arc(arc.relation, direction, offset);
    };
    for (std::int64_t b = 0; b < batch; ++b) {
      const SequenceWords* words = sequences[static_cast<std::size_t>(b)];
      if (words == nullptr) continue;
      word_counts[static_cast<std::size_t>(b)] = words->words;
      for (std::size_t position = 0; position < words->token_word.size(); ++position) {
        if (words->token_word[position] >= 0) {
          token_word[static_cast<std::size_t>(b * length) + position] = words->token_word[position];
        }
      }
      for (const WordArc& arc : words->arcs) {
        add_query(b, arc.dependent, arc.head, arc, ArcDirection::d2h, arc.offset);
        add_query(b, arc.head, arc.dependent, arc, ArcDirection::h2d, -arc.offset);
      }
    }
    const auto on_device = [&](const std::vector<std::int64_t>& values) {
      return torch::tensor(values, torch::kInt64).to(device);
    };
    token_word_ = on_device(token_word).view({batch, length});
    word_counts_ = on_device(word_counts);
    arc_query_ = on_device(arc_query);
    arc_target_ = on_device(arc_target);
    arc_group_ = on_device(arc_group);
  }

  RelationAccuracy statistics_;
  std::int64_t cached_batch_ = -1;
  std::int64_t words_ = 1;     // the largest word count of the batch
  at::Tensor token_word_;      // [B, T] int64: each token's word, words_ for none
  at::Tensor word_counts_;     // [B] int64
  std::vector<ArcGroup> groups_;
  at::Tensor arc_query_;       // [A] int64: b * words_ + query word, of each arc seen from its query
  at::Tensor arc_target_;      // [A] int64: the target word
  at::Tensor arc_group_;       // [A] int64: index into groups_
  at::Tensor summed_;          // [B, H, W, W]: word attention of the current layer's blocks so far
  int summed_layer_ = -1;
};
}  // namespace

std::unique_ptr<HeadClassifier> make_syntactic_classifier() { return std::make_unique<SyntacticClassifier>(); }

}  // namespace headscan
