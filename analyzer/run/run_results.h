#pragma once
// The end of a run (analysis.cpp): heads.json's document from what the passes left in the run's
// state, the example sequences captured again where the passes could not record them, and the
// summary's lines on what --ablation found.

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "heads/head_type.h"

namespace headscan {

struct RunState;
struct RunSummary;

// heads.json's document: the model and corpus summaries filled in from the run's state, the count
// warnings added, the heads finalized with `thresholds`. Throws InputError when headscan.json's
// n_kv_heads does not divide the query heads.
nlohmann::ordered_json heads_document(RunState& state, const Thresholds& thresholds, const RunSummary& run);

// A model that is not causal runs its example sequences again, each alone, once the passes are done;
// so does any model for the prompts of --examples, which no classifier sees.
void capture_examples_if_needed(RunState& state);

// A few lines on what --ablation found, for the command line's summary.
std::vector<std::string> ablation_findings(const nlohmann::ordered_json& document);

}  // namespace headscan
