// The needle pass: needle probes (analyzer/run/sequences/needles.h) through the instrumented model
// twice per batch: once for the model's predictions, which say where it copies the needle (its copy
// events), then, when it copied any, with those events to the retrieval classifier. A causal model
// with logits only; shard 0 only.
#include <numeric>

#include <fmt/format.h>

#include "analyzer/errors.h"
#include "analyzer/run/passes/pass.h"
#include "analyzer/run/run_state.h"
#include "analyzer/run/sequences/needles.h"
#include "heads/registry.h"

namespace headscan {
namespace {

std::int64_t total(const std::vector<std::int64_t>& counts) {
  return std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
}

// The corpus's first text tokens (non-special ids in reading order), as many as the haystacks take:
// read from the start of the whole corpus, so that a run in shards builds the single run's probes.
std::vector<std::int64_t> haystack_text(const RunState& state) {
  const std::int64_t wanted = needle_text_wanted(state.text.shape);
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

class NeedlePass : public Pass {
 public:
  const char* name() const override { return "needles"; }
  std::optional<BatchSource> feeds() const override { return BatchSource::needle; }

  void run(RunState& state) override {
    NeedleSummary& summary = state.needle_summary;
    summary.events.assign(kNeedleDepths.size(), 0);
    summary.candidates.assign(kNeedleDepths.size(), 0);
    if (!state.shape.causal) {
      summary.note = "a bidirectional model sees the whole needle at once: retrieval heads are defined on causal models";
      return;
    }
    if (state.shape.logits_width < state.text.tokenizer->vocab_size()) {
      summary.note = "the model's output is not logits [batch, tokens, vocabulary]: copy events need its predictions";
      return;
    }
    const NeedleSet needles = make_needles(*state.text.tokenizer, state.text.shape, haystack_text(state), state.options.seed);
    summary.probes = static_cast<int>(needles.sequences.size());
    summary.haystack_length = needles.haystack_length;
    if (needles.sequences.empty()) {
      summary.note = "no needle probes: " + needles.skipped_because;
      return;
    }
    const auto batch_size = static_cast<std::size_t>(std::max<std::int64_t>(1, state.options.batch_size));
    std::int64_t batch_index = 0;
    for (std::size_t first = 0; first < needles.sequences.size(); first += batch_size) {
      const std::vector<Sequence> batch(
          needles.sequences.begin() + static_cast<std::ptrdiff_t>(first),
          needles.sequences.begin() + static_cast<std::ptrdiff_t>(std::min(first + batch_size, needles.sequences.size())));
      try {
        const ForwardOutput predicted = state.forward(batch, std::nullopt, batch_index, nullptr);
        if (!predicted.logits) throw InputError("the model returned no logits for the needle probes");
        const std::int64_t before = total(summary.events);
        state.needle_targets = needle_targets(*predicted.logits, batch, needles, summary.events, summary.candidates);
        // Without a copy event the batch adds nothing to any head's hits or events: no second call.
        if (total(summary.events) > before) state.forward(batch, feeds(), batch_index++, nullptr);
      } catch (...) {
        state.needle_targets = at::Tensor();
        rethrow_with_context(fmt::format("{} (needle probes): ", state.model->path()));
      }
      state.needle_targets = at::Tensor();
    }
    const std::int64_t events = total(summary.events);
    if (events < kMinimumCopyEvents) {
      summary.note = fmt::format("the model copied the needle {} times, fewer than the {} retrieval needs", events,
                                 kMinimumCopyEvents);
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_needle_pass() { return std::make_unique<NeedlePass>(); }

}  // namespace headscan
