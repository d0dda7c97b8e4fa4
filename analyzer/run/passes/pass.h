#pragma once
// A run is a sequence of passes over one instrumented model (DESIGN.md, "Layout"). A pass produces
// batches, says which classifiers see their attention, and may read the model's outputs; it
// keeps what it finds in the run's shared state (analyzer/run/run_state.h). A new pass (gradients,
// ablations, saving state for a merge) is one file and one line in make_passes().

#include <memory>
#include <optional>
#include <vector>

#include "analyzer/run/analysis.h"
#include "heads/classifier.h"

namespace headscan {

struct RunState;

class Pass {
 public:
  virtual ~Pass() = default;
  // Names the pass in messages and in heads.json's run.phases: "idf", "corpus", "probes".
  virtual const char* name() const = 0;
  // The classifiers its attention goes to: those that read this source; none when nullopt.
  virtual std::optional<BatchSource> feeds() const = 0;
  virtual void run(RunState& state) = 0;
};

// Tokenizer-only: document frequencies of the corpus (or --idf's) for rare-word heads.
std::unique_ptr<Pass> make_document_frequency_pass();
// The corpus, batch by batch, to the corpus classifiers; counts sequences and tokens.
std::unique_ptr<Pass> make_corpus_pass();
// The synthetic probe sequences to the probe classifiers; the model's repeat loss from its logits.
std::unique_ptr<Pass> make_probe_pass();
// Needle probes to the retrieval classifier, with the model's copy events
// (analyzer/run/sequences/needles.h).
std::unique_ptr<Pass> make_needle_pass();

// --ablation (analyzer/run/passes/ablation.h): head importance from one backward pass per batch of
// the ablation set; the set's loss with each head removed; the pruning curve; circuits on the
// probes.
std::unique_ptr<Pass> make_importance_pass();
std::unique_ptr<Pass> make_ablation_pass();
std::unique_ptr<Pass> make_pruning_pass();
std::unique_ptr<Pass> make_circuit_pass();
// The KV-cache plan's loss with its streaming heads restricted to their caches (analyzer/run/kv_plan.h).
std::unique_ptr<Pass> make_kv_plan_pass();

// The passes of a run with these options, in order.
std::vector<std::unique_ptr<Pass>> make_passes(const AnalysisOptions& options);
// The notes of the probes --probes leaves out (KIND=none), where their scores would be: the probes
// section's skipped_because, model.repeat_loss_note, retrieval's note (and kv_plan.needles_note).
void note_probes_left_out(RunState& state);

}  // namespace headscan
