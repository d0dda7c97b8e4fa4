#pragma once
// Warnings that follow from a run's corpus counts: invalid UTF-8, too few parses, a cut corpus.
// A single run and `headscan merge` (from the shards' summed counts) give the same ones.

#include <cstdint>
#include <string>
#include <vector>

#include "heads/head_type.h"
#include "reports/heads_json.h"

namespace headscan {

// `corpus_path` names the corpus in the messages; `max_sequences` is --max-sequences (0: none).
std::vector<std::string> count_warnings(const std::string& corpus_path, const CorpusSummary& corpus,
                                        std::int64_t invalid_utf8_replacements, const Thresholds& thresholds,
                                        std::int64_t max_sequences);

}  // namespace headscan
