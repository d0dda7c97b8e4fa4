#pragma once
// A shard run (--shard I/N, analyzer/run/shards/shard_state.h): what differs from a single run. The
// corpus pass reads the shard's slice; probes and the causal passes run in shard 0 only; the
// result is the shard's state, which `headscan merge` adds up.

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyzer/run/analysis.h"

namespace headscan {

struct RunState;
struct RunSummary;
class OutputDirectory;
class Pass;

// Refuses options a shard cannot honour exactly (InputError).
void check_shard_options(const AnalysisOptions& options);

// --ablation in shard 0: the ablation set, the first --ablation-sequences sequences of the whole
// corpus, which a single run takes from its corpus pass.
std::unique_ptr<Pass> make_ablation_set_pass();

// Writes state.json, examples.bin and idf.txt into the output's staging directory. `document` is
// the shard's own heads.json; `warnings` those of the setup and the passes.
void save_shard_state(RunState& state, const nlohmann::ordered_json& document,
                      const std::vector<std::string>& warnings, const RunSummary& run, const OutputDirectory& output);

}  // namespace headscan
