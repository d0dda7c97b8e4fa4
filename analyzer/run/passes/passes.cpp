#include "analyzer/run/passes/pass.h"
#include "analyzer/run/shard_run.h"

namespace headscan {

std::vector<std::unique_ptr<Pass>> make_passes(const AnalysisOptions& options) {
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(make_document_frequency_pass());
  passes.push_back(make_corpus_pass());
  // Shards: the probes and the causal passes run once, in shard 0.
  if (options.shard && options.shard->index != 0) return passes;
  passes.push_back(make_probe_pass());
  passes.push_back(make_needle_pass());
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

}  // namespace headscan
