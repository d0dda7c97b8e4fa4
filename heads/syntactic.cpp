// syntactic: per dependency relation and direction, how often the word a head attends to most is
// the relation's other end, against the most common word offset (Clark et al. 2019, §4.2; Voita et
// al. 2019, §5.2; DESIGN.md, "Syntactic heads"). Label "syntactic" when any relation passes.
// Words sharing tokens (a multiword token's) are one local word (SequenceWords): a prediction is
// right when it is the target's local word, and arcs inside one are not in the batch's arcs.
#include "heads/syntactic.h"

#include <cmath>
#include <limits>
#include <algorithm>
#include <map>
#include <optional>
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

// out[..., index[i], ...] += source[..., i, ...] along `dim`, each target's additions in the order of
// i on every device, so the same input gives the same sums bit for bit whatever the blocks:
// index_add_ does so on the CPU (one thread per target), index_put_ with accumulation on a GPU (by
// sorting), where index_add_ and scatter_add_ would use atomics in a varying order.
void add_in_order(at::Tensor& out, std::int64_t dim, const at::Tensor& index, const at::Tensor& source) {
  if (out.device().is_cpu()) {
    out.index_add_(dim, index, source);
    return;
  }
  c10::List<std::optional<at::Tensor>> indices;
  for (std::int64_t d = 0; d < dim; ++d) indices.push_back(std::nullopt);
  indices.push_back(std::optional<at::Tensor>(index));
  out.index_put_(indices, source, /*accumulate=*/true);
}

}  // namespace

MostAttendedWords::MostAttendedWords(const std::vector<std::int64_t>& token_word, std::int64_t batch,
                                     std::int64_t length, std::int64_t words,
                                     const std::vector<std::int64_t>& word_counts,
                                     const std::vector<std::int64_t>& queries, const c10::Device& device)
    : batch_(batch), length_(length), words_(words), next_row_(length) {
  TORCH_CHECK(static_cast<std::int64_t>(token_word.size()) == batch * length && static_cast<std::int64_t>(word_counts.size()) == batch,
              "token_word must hold B * T = ", batch * length, " words and word_counts B = ", batch, ", got ",
              token_word.size(), " and ", word_counts.size());
  // Each word's last token, per sequence.
  std::vector<std::int64_t> last(static_cast<std::size_t>(batch * words), -1);
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t t = 0; t < length; ++t) {
      const std::int64_t word = token_word[static_cast<std::size_t>(b * length + t)];
      TORCH_CHECK(word >= 0 && word <= words, "token ", t, " of sequence ", b, " has word ", word, ", not 0 .. ", words);
      if (word < words) last[static_cast<std::size_t>(b * words + word)] = t;
    }
  }
  // Slots: the query words in the order of their last tokens (stable: ties in the queries' order).
  const auto count = static_cast<std::int64_t>(queries.size());
  std::vector<std::int64_t> order(static_cast<std::size_t>(count));
  for (std::int64_t k = 0; k < count; ++k) {
    const std::int64_t query = queries[static_cast<std::size_t>(k)];
    TORCH_CHECK(query >= 0 && query < batch * words, "query word ", query, " is not in 0 .. B * words − 1 = ", batch * words - 1);
    order[static_cast<std::size_t>(k)] = k;
  }
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return last[static_cast<std::size_t>(queries[static_cast<std::size_t>(a)])] <
           last[static_cast<std::size_t>(queries[static_cast<std::size_t>(b)])];
  });
  std::vector<std::int64_t> slot_of_word(static_cast<std::size_t>(batch * words), -1);
  std::vector<std::int64_t> slot_word, slot_count;
  for (std::int64_t slot = 0; slot < count; ++slot) {
    const std::int64_t query = queries[static_cast<std::size_t>(order[static_cast<std::size_t>(slot)])];
    TORCH_CHECK(slot_of_word[static_cast<std::size_t>(query)] < 0, "query word ", query, " is given twice");
    slot_of_word[static_cast<std::size_t>(query)] = slot;
    slot_last_.push_back(last[static_cast<std::size_t>(query)]);
    slot_word.push_back(query % words);
    slot_count.push_back(word_counts[static_cast<std::size_t>(query / words)]);
  }
  std::vector<std::int64_t> token_slot(token_word.size(), -1);
  opened_.assign(static_cast<std::size_t>(length), -1);
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t t = 0; t < length; ++t) {
      const std::int64_t word = token_word[static_cast<std::size_t>(b * length + t)];
      if (word == words) continue;
      const std::int64_t slot = slot_of_word[static_cast<std::size_t>(b * words + word)];
      token_slot[static_cast<std::size_t>(b * length + t)] = slot;
      opened_[static_cast<std::size_t>(t)] = std::max(opened_[static_cast<std::size_t>(t)], slot);
    }
  }
  for (std::size_t t = 1; t < opened_.size(); ++t) opened_[t] = std::max(opened_[t], opened_[t - 1]);
  const auto on_device = [&](const std::vector<std::int64_t>& values) {
    return torch::tensor(values, torch::kInt64).to(device);
  };
  token_word_ = on_device(token_word).view({batch, length});
  token_slot_ = on_device(token_slot).view({batch, length});
  slot_word_ = on_device(slot_word);
  slot_count_ = on_device(slot_count);
  slot_query_ = on_device(order);
}

void MostAttendedWords::observe(const at::Tensor& attention, std::int64_t first_row) {
  const RowBlock block = row_block(attention, first_row);
  TORCH_CHECK(attention.size(0) == batch_ && block.length == length_, "a row block [B,H,Q,T] of B = ", batch_,
              " sequences of T = ", length_, " tokens was expected, got ", attention.sizes());
  TORCH_CHECK(block.first == 0 || (block.first == next_row_ && next_row_ < length_),
              "row blocks of a layer must start at row 0 and follow each other, got a block from row ", block.first,
              next_row_ < length_ ? " where row " + std::to_string(next_row_) + " was next" : std::string(" where a layer begins"));
  if (block.first == 0) {
    scored_ = 0;
    open_ = at::Tensor();
    predicted_ = torch::empty({attention.size(1), static_cast<std::int64_t>(slot_last_.size())},
                              attention.options().dtype(torch::kInt64));
  }
  // A few rows at a time, so that their word sums [B, H, q, W + 1] stay near kSummaryChunkElements.
  const std::int64_t per_row = std::max<std::int64_t>(1, batch_ * attention.size(1) * (words_ + 1));
  const std::int64_t step = std::max<std::int64_t>(1, kSummaryChunkElements / per_row);
  for (std::int64_t row = 0; row < block.rows; row += step) {
    observe_rows(attention.narrow(2, row, std::min(step, block.rows - row)), block.first + row);
  }
  next_row_ = block.end();
}

void MostAttendedWords::observe_rows(const at::Tensor& attention, std::int64_t first_row) {
  const std::int64_t rows = attention.size(2);
  const std::int64_t end = first_row + rows;
  // Slots scored_ .. ended − 1 end in these rows; slots up to `highest` have begun.
  const auto ended = static_cast<std::int64_t>(
      std::upper_bound(slot_last_.begin(), slot_last_.end(), end - 1) - slot_last_.begin());
  const std::int64_t highest = std::max(opened_[static_cast<std::size_t>(end - 1)], ended - 1);
  const std::int64_t slots = highest + 1 - scored_;  // the slots these rows may touch
  if (slots <= 0) return;
  const std::int64_t heads = attention.size(1);
  // [B, H, q, W + 1]: each row's sum over each word's columns, in column order (on the CPU one
  // scatter-add for the batch, each row's additions in order on one thread).
  at::Tensor to_words = torch::zeros({batch_, heads, rows, words_ + 1}, attention.options());
  if (attention.device().is_cpu()) {
    to_words.scatter_add_(/*dim=*/3, token_word_.view({batch_, 1, 1, length_}).expand(attention.sizes()), attention);
  } else {
    for (std::int64_t b = 0; b < batch_; ++b) {
      at::Tensor sequence = to_words[b];
      add_in_order(sequence, /*dim=*/2, token_word_[b], attention[b]);
    }
  }
  // [H, slots + 1, W + 1]: the open slots' sums so far, the rows of each slot added in row order;
  // the last row takes the rows of tokens in no query word.
  at::Tensor sums = torch::zeros({heads, slots + 1, words_ + 1}, attention.options());
  if (open_.defined()) sums.narrow(1, 0, open_.size(1)).copy_(open_);
  const at::Tensor slot = token_slot_.narrow(1, first_row, rows);
  const at::Tensor local = torch::where(slot >= 0, slot - scored_, torch::full_like(slot, slots));
  for (std::int64_t b = 0; b < batch_; ++b) add_in_order(sums, /*dim=*/1, local[b], to_words[b]);
  const std::int64_t ending = ended - scored_;  // rows 0 .. ending − 1 of `sums`
  if (ending > 0) {
    const at::Tensor column = torch::arange(words_ + 1, slot_word_.options());
    const at::Tensor excluded = (column.unsqueeze(0) >= slot_count_.narrow(0, scored_, ending).unsqueeze(1)) |
                                (column.unsqueeze(0) == slot_word_.narrow(0, scored_, ending).unsqueeze(1));
    const at::Tensor best =
        sums.narrow(1, 0, ending).masked_fill(excluded, -std::numeric_limits<float>::infinity()).argmax(-1);
    predicted_.index_copy_(1, slot_query_.narrow(0, scored_, ending), best);
  }
  open_ = slots > ending ? sums.narrow(1, ending, slots - ending).clone() : at::Tensor();
  scored_ = ended;
}

at::Tensor predicted_words(const at::Tensor& attention, const at::Tensor& token_word, std::int64_t words,
                           const at::Tensor& word_counts) {
  TORCH_CHECK(attention.dim() == 4 && attention.size(2) == attention.size(3), "attention must be [B,H,T,T], got ",
              attention.sizes());
  TORCH_CHECK(token_word.dim() == 2 && token_word.size(0) == attention.size(0) && token_word.size(1) == attention.size(3),
              "token_word must be [B,T] for attention ", attention.sizes(), ", got ", token_word.sizes());
  TORCH_CHECK(word_counts.dim() == 1 && word_counts.size(0) == attention.size(0), "word_counts must be [B] for attention ",
              attention.sizes(), ", got ", word_counts.sizes());
  const at::Tensor host_words = token_word.to(torch::kCPU, torch::kInt64).contiguous();
  const at::Tensor host_counts = word_counts.to(torch::kCPU, torch::kInt64).contiguous();
  const std::int64_t batch = attention.size(0);
  std::vector<std::int64_t> queries(static_cast<std::size_t>(batch * words));
  for (std::int64_t query = 0; query < batch * words; ++query) queries[static_cast<std::size_t>(query)] = query;
  MostAttendedWords most_attended(
      std::vector<std::int64_t>(host_words.data_ptr<std::int64_t>(), host_words.data_ptr<std::int64_t>() + host_words.numel()),
      batch, attention.size(3), words,
      std::vector<std::int64_t>(host_counts.data_ptr<std::int64_t>(), host_counts.data_ptr<std::int64_t>() + batch),
      queries, attention.device());
  most_attended.observe(attention, /*first_row=*/0);
  // [H, B * W] in the queries' order b * W + w → [B, H, W].
  return most_attended.predicted().view({attention.size(1), batch, words}).permute({1, 0, 2});
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
    most_attended_.reset();
    layer_ = -1;
  }

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    if (context.source != BatchSource::corpus || context.words == nullptr) return;
    const RowBlock block = row_block(attention, context);
    if (context.batch_index != cached_batch_) prepare(context, block.length, attention.device());
    if (groups_.empty()) return;
    TORCH_CHECK(block.first == 0 || layer == layer_, "row blocks of layer ", layer,
                " must start at row 0 and follow each other, got a block from row ", block.first);
    layer_ = layer;
    // A query word's tokens may straddle blocks: it is scored after the block of its last token.
    most_attended_->observe(attention, block.first);
    if (!most_attended_->complete()) return;
    const std::int64_t heads = attention.size(1);
    // [A, H]: each arc's query word's prediction, per head, against the arc's target.
    const at::Tensor per_arc = most_attended_->predicted().index_select(1, arc_query_).t();
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
    most_attended_.reset();
    layer_ = -1;
    const auto& sequences = *context.words;
    const auto batch = static_cast<std::int64_t>(sequences.size());
    words_ = 1;
    for (const SequenceWords* words : sequences) {
      if (words != nullptr) words_ = std::max<std::int64_t>(words_, words->words);
    }
    std::vector<std::int64_t> token_word(static_cast<std::size_t>(batch * length), words_);
    std::vector<std::int64_t> word_counts(static_cast<std::size_t>(batch), 0);
    std::vector<std::int64_t> arc_query, arc_target, arc_group;
    std::vector<std::int64_t> queries;  // the arcs' query words, b * words_ + word, once each
    std::vector<std::int64_t> query_of(static_cast<std::size_t>(batch * words_), -1);
    std::map<std::pair<std::string, ArcDirection>, std::int64_t> group_of;
    const auto add_query = [&](std::int64_t sequence, int query, int target, const WordArc& arc, ArcDirection direction,
                               int offset) {
      if (context.causal && target > query) return;  // causal models: the target ends before the query begins
      const auto [found, added] = group_of.try_emplace({arc.relation, direction}, static_cast<std::int64_t>(groups_.size()));
      if (added) groups_.push_back(ArcGroup{arc.relation, direction});
      std::int64_t& index = query_of[static_cast<std::size_t>(sequence * words_ + query)];
      if (index < 0) {
        index = static_cast<std::int64_t>(queries.size());
        queries.push_back(sequence * words_ + query);
      }
      arc_query.push_back(index);
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
    if (groups_.empty()) return;
    most_attended_.emplace(token_word, batch, length, words_, word_counts, queries, device);
    arc_query_ = on_device(arc_query);
    arc_target_ = on_device(arc_target);
    arc_group_ = on_device(arc_group);
  }

  RelationAccuracy statistics_;
  std::int64_t cached_batch_ = -1;
  std::int64_t words_ = 1;     // the largest word count of the batch
  std::vector<ArcGroup> groups_;
  std::optional<MostAttendedWords> most_attended_;  // the batch's arcs' query words
  at::Tensor arc_query_;       // [A] int64: the index of each arc's query word in most_attended_'s
  at::Tensor arc_target_;      // [A] int64: the target word
  at::Tensor arc_group_;       // [A] int64: index into groups_
  int layer_ = -1;             // the layer of the last block seen
};
}  // namespace

std::unique_ptr<HeadClassifier> make_syntactic_classifier() { return std::make_unique<SyntacticClassifier>(); }

}  // namespace headscan
