#pragma once
// heads.json's "retrieval": the needle probes (analyzer/run/sequences/needles.h), the model's copy
// accuracy per depth over all lengths, and the needle-in-a-haystack grid (Wu et al. 2024): per
// probe length and depth the probes, candidate queries, copy events and copy accuracy, and per
// attention layer and head its retrieval hits among those copy events.

#include <nlohmann/json_fwd.hpp>

namespace headscan {

struct NeedleSummary;

nlohmann::ordered_json needle_json(const NeedleSummary& summary);

}  // namespace headscan
