// The needle pass: needle probes (analyzer/run/sequences/needles.h) at each probe length, through
// the instrumented model once: its predictions at the final needle's queries (their logits only)
// say where it copies the needle (its copy events), and each head's argmax key at those queries,
// kept during the same call, goes for each probe where it copied any, with those events, to a
// retrieval classifier of the (length, depth) cell's own, whose hits are the cell's per-head grid
// and whose statistics are then added to the run's retrieval classifier. A length runs its probes
// round by round as the cost plan says (NeedleLengthPlan, needle_plan.h), each round in batches of
// at most --batch-size for the predictions. A causal model with logits only; shard 0 only.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/run/model_output.h"
#include "analyzer/run/passes/pass.h"
#include "analyzer/run/progress.h"
#include "analyzer/run/run_state.h"
#include "analyzer/run/sequences/needles.h"
#include "analyzer/run/sequences/probe_budget.h"
#include "heads/registry.h"
#include "heads/row_summary.h"
#include "heads/saved_statistics.h"

namespace headscan {
namespace {

static_assert(kNeedleLengthEvents == kMinimumCopyEvents, "a length stops with the copy events a retrieval score needs");

// The corpus's first text tokens (non-special ids in reading order), as many as the haystacks take:
// read from the start of the whole corpus, so that a run in shards builds the single run's probes.
std::vector<std::int64_t> haystack_text(const RunState& state, const std::vector<std::int64_t>& lengths) {
  const std::int64_t wanted = needle_text_wanted(state.text.shape, lengths);
  std::vector<std::int64_t> text;
  if (wanted <= 0) return text;
  DocumentReader reader(state.options.corpus_path, "none", state.options.text_field);
  SequenceReader windows(reader, *state.text.tokenizer, state.text.shape, state.options.check_interrupt);
  std::vector<Sequence> sequences;
  while (static_cast<std::int64_t>(text.size()) < wanted && windows.next(sequences)) {
    for (const Sequence& sequence : sequences) {
      for (std::size_t t = 0; t < sequence.ids.size(); ++t) {
        if (sequence.special[t] == 0) text.push_back(sequence.ids[t]);
      }
    }
    sequences.clear();
  }
  if (static_cast<std::int64_t>(text.size()) > wanted) text.resize(static_cast<std::size_t>(wanted));
  return text;
}

// What the default run's needle probes are sized to: the corpus's tokens and its longest window, as
// the corpus pass makes them (up to --max-sequences), read again from the corpus's start so that
// shard 0 of a sharded run sizes them as the single run does. Tokenizing only: no model.
struct CorpusExtent {
  std::int64_t tokens = 0;
  std::int64_t longest = 0;
};

CorpusExtent corpus_extent(const RunState& state) {
  DocumentReader reader(state.options.corpus_path, "none", state.options.text_field);
  SequenceReader windows(reader, *state.text.tokenizer, state.text.shape, state.options.check_interrupt);
  const std::int64_t most = state.options.max_sequences;
  CorpusExtent extent;
  std::int64_t counted = 0;
  std::vector<Sequence> sequences;
  while ((most == 0 || counted < most) && windows.next(sequences, nullptr, most > 0 ? most - counted : 0)) {
    for (const Sequence& sequence : sequences) {
      if (most > 0 && counted == most) break;
      extent.tokens += static_cast<std::int64_t>(sequence.ids.size());
      extent.longest = std::max(extent.longest, static_cast<std::int64_t>(sequence.ids.size()));
      ++counted;
    }
    sequences.clear();
  }
  return extent;
}

// Each head's argmax key (heads/row_summary.h: the first key of the largest weight) at some query
// rows of a forward call, kept layer by layer as its row blocks go by ([B, H, R] int64 per layer),
// and replayed as one-hot row blocks.
class QueryArgmax {
 public:
  // `rows`: ascending, without repeats.
  QueryArgmax(const std::vector<std::int64_t>& rows, const ModelShape& shape)
      : causal_(shape.causal), rows_(static_cast<std::int64_t>(rows.size())),
        argmax_(static_cast<std::size_t>(shape.layers)) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (i == 0 || rows[i] != rows[i - 1] + 1) runs_.push_back(Run{rows[i], 0, static_cast<std::int64_t>(i)});
      ++runs_.back().count;
    }
  }

  // A row block [B, H, Q, T] of `layer`'s attention from row first_row (AttentionCallback).
  void add(int layer, const at::Tensor& attention, std::int64_t first_row) {
    const std::int64_t end = first_row + attention.size(2);
    for (const Run& run : runs_) {
      const std::int64_t first = std::max(run.first, first_row);
      const std::int64_t last = std::min(run.first + run.count, end);
      if (first >= last) continue;
      at::Tensor& kept = argmax_.at(static_cast<std::size_t>(layer));
      if (!kept.defined()) {
        kept = at::zeros({attention.size(0), attention.size(1), rows_}, attention.options().dtype(at::kLong));
      }
      const at::Tensor rows = attention.narrow(/*dim=*/2, first - first_row, last - first);
      kept.narrow(/*dim=*/2, run.offset + first - run.first, last - first)
          .copy_(summarize_rows(rows, causal_, first).argmax);
    }
  }

  // Sequence b's rows, to `feed` as one-hot blocks [1, H, rows, width] of each layer in order.
  void replay(std::int64_t b, std::int64_t width, const AttentionCallback& feed) const {
    for (std::size_t layer = 0; layer < argmax_.size(); ++layer) {
      const at::Tensor& kept = argmax_[layer];
      if (!kept.defined()) {
        throw InputError(fmt::format("the needle probes' forward call gave layer {} no attention at the needle's "
                                     "queries",
                                     layer));
      }
      for (const Run& run : runs_) {
        const at::Tensor keys = kept.narrow(/*dim=*/0, b, 1).narrow(/*dim=*/2, run.offset, run.count);  // [1, H, n]
        at::Tensor one_hot = at::zeros({1, kept.size(1), run.count, width}, kept.options().dtype(at::kFloat));
        one_hot.scatter_(/*dim=*/3, keys.unsqueeze(-1), 1.0);
        feed(static_cast<int>(layer), one_hot, run.first);
      }
    }
  }

 private:
  struct Run {  // consecutive rows first .. first + count − 1, at `offset` in the kept rows
    std::int64_t first;
    std::int64_t count;
    std::int64_t offset;
  };
  bool causal_;
  std::int64_t rows_;
  std::vector<Run> runs_;
  std::vector<at::Tensor> argmax_;
};

// The run's retrieval classifier, which every cell's statistics are added to.
HeadClassifier& run_retrieval(RunState& state) {
  for (const auto& classifier : state.classifiers.classifiers()) {
    if (classifier->name() == "retrieval") return *classifier;
  }
  throw std::logic_error("the run has no retrieval classifier for the needle probes");
}

class NeedlePass : public Pass {
 public:
  const char* name() const override { return "needles"; }
  std::optional<BatchSource> feeds() const override { return BatchSource::needle; }

  void run(RunState& state) override {
    NeedleSummary& summary = state.needle_summary;
    const AnalysisOptions& options = state.options;
    const std::int64_t max_length = state.text.shape.max_length;
    // The long-context grid runs when asked for: --needle-lengths, --max-length, or a --probes value
    // for the needles. Otherwise the probes are sized to the corpus (kNeedleCorpusShare).
    sized_to_corpus_ = options.needle_lengths.empty() && options.max_length == 0 &&
                       options.probes.needles == kPlannedProbes;
    std::int64_t longest = options.max_length > 0 ? max_length : std::min(max_length, kLongestDefaultNeedleLength);
    if (sized_to_corpus_) {
      const CorpusExtent extent = corpus_extent(state);
      longest = std::clamp(extent.longest, std::min(kShortestNeedleProbe, max_length), longest);
      budget_tokens_ = static_cast<std::int64_t>(kNeedleCorpusShare * static_cast<double>(extent.tokens));
    }
    summary.lengths = options.needle_lengths.empty() ? default_needle_lengths(longest) : options.needle_lengths;
    summary.layers = state.shape.layers;
    summary.heads = state.shape.heads;
    summary.haystack_length.assign(summary.lengths.size(), 0);
    summary.cells.assign(summary.lengths.size(), std::vector<NeedleCell>(kNeedleDepths.size()));
    if (!state.shape.causal) {
      summary.note = "a bidirectional model sees the whole needle at once: retrieval heads are defined on causal models";
      return;
    }
    const std::int64_t vocab_size = state.text.tokenizer->vocab_size();
    if (!returns_logits(state.shape, vocab_size)) {
      summary.note = "the model's output is not logits [batch, tokens, vocabulary]: copy events need its predictions";
      return;
    }
    // Kept in the run state for the KV-cache plan's check (analyzer/run/passes/kv_plan_pass.cpp).
    std::vector<NeedleSet>& sets = state.needle_sets;
    sets = make_needles(*state.text.tokenizer, state.text.shape, haystack_text(state, summary.lengths), summary.lengths,
                        state.options.seed, model_vocabulary(state.shape, vocab_size));
    for (std::size_t length = 0; length < sets.size(); ++length) {
      if (!sets[length].skipped_because.empty()) {
        summary.note = "no needle probes: " + sets[length].skipped_because;
        return;
      }
      summary.haystack_length[length] = sets[length].haystack_length;
    }
    summary.head_hits.assign(static_cast<std::size_t>(summary.layers) * static_cast<std::size_t>(summary.heads) *
                                 summary.lengths.size() * kNeedleDepths.size(),
                             0);
    HeadClassifier& retrieval = run_retrieval(state);
    std::int64_t planned = 0;  // the tokens of the probes the plans may run at most
    for (const NeedleSet& set : sets) planned += set.length * probes_most(state, set.length, sets.size());
    announce(state, sets, planned);
    Progress progress(options.progress, static_cast<std::uint64_t>(planned), "needle probes", options.on_progress,
                      "needle tokens");
    for (std::size_t length = 0; length < sets.size(); ++length) {
      run_length(state, sets[length], length, retrieval, progress);
    }
    progress.finish(static_cast<std::uint64_t>(tokens_run_));
    const std::int64_t events = summary.events();
    if (events < kMinimumCopyEvents) {
      summary.note = fmt::format("the model copied the needle {} times, fewer than the {} retrieval needs", events,
                                 kMinimumCopyEvents);
      if (cut_by_budget_) {
        summary.note += fmt::format("; the default run's needle probes take at most {:.0f} % of the corpus's tokens "
                                    "({} tokens): give --probes needles=N, --needle-lengths or a longer corpus for more",
                                    kNeedleCorpusShare * 100, budget_tokens_);
      }
    }
  }

 private:
  std::int64_t batch_index_ = 0;
  bool sized_to_corpus_ = false;
  std::int64_t budget_tokens_ = 0;  // the default run's: kNeedleCorpusShare of the corpus's tokens
  bool cut_by_budget_ = false;
  std::int64_t tokens_run_ = 0;     // the probes' tokens through the model so far

  // The probes a length of `length` tokens may run: the plan's most, or within the default run's
  // budget, shared equally by the `lengths`.
  int probes_most(const RunState& state, std::int64_t length, std::size_t lengths) const {
    const int most = needle_haystacks_most(state.options.probes.needles) * static_cast<int>(kNeedleDepths.size());
    if (!sized_to_corpus_) return most;
    return std::min(most, needle_probes_within(budget_tokens_ / static_cast<std::int64_t>(std::max<std::size_t>(1, lengths)),
                                               length));
  }

  // Before the phase: its plan, and an estimate of its time from the corpus pass's speed.
  void announce(const RunState& state, const std::vector<NeedleSet>& sets, std::int64_t planned) const {
    if (!state.options.progress || state.options.on_progress) return;
    std::vector<std::string> lengths;
    for (const NeedleSet& set : sets) lengths.push_back(fmt::format("{}", set.length));
    std::string estimate;
    if (state.corpus_seconds > 0 && state.corpus_summary.tokens > 0) {
      // A probe runs the whole model once, where the corpus pass stops after the last attention.
      const double rate = static_cast<double>(state.corpus_summary.tokens) / state.corpus_seconds;
      estimate = fmt::format(", up to about {:.0f} s at the corpus pass's {:.0f} tokens/s",
                             static_cast<double>(planned) / rate, rate);
    }
    fmt::print(stderr, "needle probes: lengths {}, at most {} tokens{}{}\n", fmt::join(lengths, ", "), planned,
               sized_to_corpus_ ? fmt::format(" ({:.0f} % of the corpus's, the default)", kNeedleCorpusShare * 100)
                                : std::string(),
               estimate);
  }

  // One length: its rounds of probes until the plan is done, then each (length, depth) cell's hits
  // and its statistics added to the run's retrieval classifier.
  void run_length(RunState& state, const NeedleSet& set, std::size_t length, HeadClassifier& retrieval,
                  Progress& progress) {
    NeedleSummary& summary = state.needle_summary;
    // A retrieval classifier per depth: its hits are the cell's per-head grid.
    std::vector<std::unique_ptr<ClassifierSet>> cells;
    for (std::size_t depth = 0; depth < kNeedleDepths.size(); ++depth) {
      std::vector<std::unique_ptr<HeadClassifier>> classifiers;
      classifiers.push_back(make_retrieval_classifier());
      cells.push_back(std::make_unique<ClassifierSet>(std::move(classifiers)));
      cells.back()->begin(state.shape, state.thresholds);
    }
    const auto batch_size = static_cast<std::size_t>(std::max<std::int64_t>(1, state.options.batch_size));
    NeedleLengthPlan plan(needle_haystacks_most(state.options.probes.needles),
                          probes_most(state, set.length, state.needle_sets.size()));
    for (auto round = plan.next_round(); !round.empty(); round = plan.next_round()) {
      std::int64_t events = 0;
      for (std::size_t first = 0; first < round.size(); first += batch_size) {
        const std::vector<NeedleProbeIndex> batch(round.begin() + static_cast<std::ptrdiff_t>(first),
                                                  round.begin() + static_cast<std::ptrdiff_t>(std::min(first + batch_size, round.size())));
        try {
          events += run_batch(state, set, batch, summary.cells[length], cells);
        } catch (...) {
          state.needle_targets = at::Tensor();
          rethrow_with_context(fmt::format("{} (needle probes of {} tokens): ", state.model->path(), set.length));
        }
        state.needle_targets = at::Tensor();
        tokens_run_ += set.length * static_cast<std::int64_t>(batch.size());
        progress.update(static_cast<std::uint64_t>(tokens_run_), static_cast<std::uint64_t>(tokens_run_));
      }
      plan.finish_round(events);
    }
    cut_by_budget_ = cut_by_budget_ || plan.cut_by_budget();
    for (std::size_t depth = 0; depth < kNeedleDepths.size(); ++depth) {
      const nlohmann::json saved = cells[depth]->save().at("retrieval");
      add_hits(summary, saved, length, depth);
      retrieval.merge(saved);
    }
  }

  // One batch of a round's probes, through the model once. Its predictions at the final needles'
  // queries (the logits of those rows only) say the copy events; each head's argmax key at those
  // queries, kept per layer during the same call, is then replayed to the cell of each probe with a
  // copy event as one-hot rows: the retrieval statistic reads a row's argmax key only
  // (heads/retrieval.cpp), which a one-hot row holds alone. Returns the batch's copy events.
  std::int64_t run_batch(RunState& state, const NeedleSet& set, const std::vector<NeedleProbeIndex>& indices,
                         std::vector<NeedleCell>& summary_cells, std::vector<std::unique_ptr<ClassifierSet>>& cells) {
    std::vector<Sequence> batch;
    std::vector<const NeedleProbe*> probes;
    for (const NeedleProbeIndex& index : indices) {
      batch.push_back(set.sequence(index.haystack, index.depth, state.text.shape));
      probes.push_back(&set.probe(index.haystack, index.depth));
    }
    const std::vector<std::int64_t> rows = needle_query_rows(probes);
    const at::Tensor row_tensor = at::tensor(rows, at::kLong);
    QueryArgmax kept(rows, state.shape);
    const AttentionCallback keep = [&kept](int layer, const at::Tensor& attention, std::int64_t first_row) {
      kept.add(layer, attention, first_row);
    };
    const std::int64_t columns = state.columns(batch);
    std::vector<std::int64_t> events;
    at::Tensor targets;
    {
      const ForwardOutput predicted =
          state.forward(batch, std::nullopt, batch_index_, nullptr, nullptr, nullptr, nullptr, &row_tensor, &keep);
      if (!predicted.logits) throw InputError("the model returned no logits for the needle probes");
      targets = needle_targets(*predicted.logits, rows, columns, probes, events);
    }
    std::int64_t batch_events = 0;
    for (std::size_t b = 0; b < indices.size(); ++b) {
      const auto depth = static_cast<std::size_t>(indices[b].depth);
      NeedleCell& cell = summary_cells[depth];
      cell.probes += 1;
      cell.candidates += kNeedleLength - 1;
      cell.events += events[b];
      batch_events += events[b];
      // Without a copy event the probe adds nothing to any head's hits or events.
      if (events[b] == 0) continue;
      const auto probe = static_cast<std::int64_t>(b);
      const std::int64_t width = state.columns({batch[b]});
      state.needle_targets = targets.narrow(/*dim=*/0, probe, 1).narrow(/*dim=*/1, 0, width);
      state.replay({batch[b]}, *feeds(), batch_index_++, *cells[depth],
                   [&](const AttentionCallback& feed) { kept.replay(probe, width, feed); });
    }
    return batch_events;
  }

  // The cell's hits per head: the sums of its retrieval statistics, whole numbers (each hit adds 1).
  static void add_hits(NeedleSummary& summary, const nlohmann::json& saved, std::size_t length, std::size_t depth) {
    const SavedHeadMeans means = load_head_means(saved, summary.layers, summary.heads, saved_statistics_path("retrieval"));
    for (int layer = 0; layer < summary.layers; ++layer) {
      for (int head = 0; head < summary.heads; ++head) {
        const double hits = means.sums[static_cast<std::size_t>(layer)][static_cast<std::size_t>(head)].value();
        summary.hits(layer, head, length, depth) = std::llround(hits);
      }
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_needle_pass() { return std::make_unique<NeedlePass>(); }

}  // namespace headscan
