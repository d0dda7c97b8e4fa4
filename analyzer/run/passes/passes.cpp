#include "analyzer/run/passes/pass.h"
#include "analyzer/run/run_state.h"
#include "analyzer/run/shard_run.h"

namespace headscan {

std::vector<std::unique_ptr<Pass>> make_passes(const AnalysisOptions& options) {
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(make_document_frequency_pass());
  passes.push_back(make_corpus_pass());
  // Shards: the probes and the causal passes run once, in shard 0.
  if (options.shard && options.shard->index != 0) return passes;
  // --probes KIND=none: no pass, no phase (note_probes_left_out gives the reasons).
  if (options.probes.induction != 0) passes.push_back(make_probe_pass());
  if (options.probes.needles != 0) passes.push_back(make_needle_pass());
  if (options.ablation) {
    if (options.shard) passes.push_back(make_ablation_set_pass());
    passes.push_back(make_importance_pass());
    passes.push_back(make_ablation_pass());
    passes.push_back(make_pruning_pass());
    passes.push_back(make_circuit_pass());
    passes.push_back(make_kv_plan_pass());
  }
  return passes;
}

void note_probes_left_out(RunState& state) {
  const ProbeBudget& probes = state.options.probes;
  if (state.options.shard && state.options.shard->index != 0) return;  // no shard but 0 runs probes
  if (probes.induction == 0) {
    const std::string note = "no probe sequences: --probes left them out (induction=none)";
    state.probe_summary.seed = state.options.seed;
    state.probe_summary.skipped_because = note;
    state.model_summary.repeat_loss_note = note;
  }
  if (probes.needles == 0) state.needle_summary.note = "no needle probes: --probes left them out (needles=none)";
}

}  // namespace headscan
