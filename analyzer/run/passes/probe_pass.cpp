// The probe pass: the synthetic sequences BOS + R R R R (+ suffix; analyzer/run/sequences/probes.h)
// through the instrumented model to the probe classifiers (induction, duplicate-token), and the
// model's next-token loss on each repeat when it returns logits.
#include <fmt/format.h>

#include "analyzer/errors.h"
#include "analyzer/run/model_output.h"
#include "analyzer/run/passes/pass.h"
#include "analyzer/run/progress.h"
#include "analyzer/run/run_state.h"
#include "analyzer/run/sequences/probe_budget.h"
#include "analyzer/run/sequences/probes.h"

namespace headscan {
namespace {

class ProbePass : public Pass {
 public:
  const char* name() const override { return "probes"; }
  std::optional<BatchSource> feeds() const override { return BatchSource::probe; }

  void run(RunState& state) override {
    const Tokenizer& tokenizer = *state.text.tokenizer;
    const SequenceShape& sequence_shape = state.text.shape;
    // A bidirectional model sees the template's suffix after the repeats, as after every text; in a
    // causal model no query would see it, so its probes go without (and keep their room).
    SequenceShape probe_shape = sequence_shape;
    if (state.shape.causal) probe_shape.suffix_ids.clear();
    const std::int64_t count = state.options.probes.induction;
    state.probes = make_probes(tokenizer, probe_shape, state.options.seed,
                               count == kPlannedProbes ? kInductionProbes : static_cast<int>(count),
                               model_vocabulary(state.shape, tokenizer.vocab_size()));
    ProbeSet& probes = state.probes;
    ProbeSummary& summary = state.probe_summary;
    summary.seed = state.options.seed;
    summary.count = static_cast<int>(probes.sequences.size());
    summary.repeats = probes.repeats;
    summary.repeat_lengths = probes.repeat_lengths;
    summary.skipped_because = probes.skipped_because;
    if (probes.sequences.empty()) {
      state.warnings.push_back("no probe sequences, so no induction or duplicate-token scores: " +
                               probes.skipped_because);
      state.model_summary.repeat_loss_note = "no probe sequences";
      return;
    }
    ExampleChooser chooser;
    chooser.offer(probes.sequences.front());
    state.probe_example_sequences = chooser.chosen();
    if (state.record_examples) {
      state.probe_examples.push_back(make_example(state.probe_example_sequences.front(), tokenizer, state.shape, "probe"));
    }
    RepeatLoss repeat_loss(probes.repeats);
    std::int64_t batch_index = 0;
    bool have_logits = true;
    std::uint64_t total = 0;
    for (const Sequence& probe : probes.sequences) total += probe.ids.size();
    Progress progress(state.options.progress, total, "induction probes", state.options.on_progress, "probe tokens");
    std::uint64_t done = 0;
    for (const auto& batch : state.probe_batches()) {
      ForwardOutput output;
      try {
        output = state.forward(batch, feeds(), batch_index++, &state.probe_examples);
      } catch (...) {
        rethrow_with_context(fmt::format("{} (probe sequences): ", state.model->path()));
      }
      have_logits = have_logits && output.logits && returns_logits(state.shape, tokenizer.vocab_size());
      if (have_logits) repeat_loss.add(*output.logits, batch, probes, sequence_shape.bos_id.has_value());
      for (const Sequence& probe : batch) done += probe.ids.size();
      progress.update(done, done);
    }
    progress.finish(done);
    if (have_logits) {
      state.model_summary.repeat_loss = repeat_loss.mean();
    } else {
      state.model_summary.repeat_loss_note =
          "the model's output is not logits [batch, tokens, vocabulary] (alone or first in a tuple)";
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_probe_pass() { return std::make_unique<ProbePass>(); }

}  // namespace headscan
