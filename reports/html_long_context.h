#pragma once
// index.html's "Long context" section: the sink rate (heads.json "summary"), the needle-in-a-
// haystack grid ("retrieval": the model's copy accuracy per probe length and depth, and the
// retrieval hits per length and depth of the heads with the highest retrieval scores), and the
// KV-cache plan as a layer × key/value-head map with the memory it saves and, with --ablation, its
// loss ("kv_plan"). "" when heads.json has none.

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace headscan {

std::string long_context_section(const nlohmann::ordered_json& document);

// A head page's "Needle in a haystack" section: the head's retrieval hits over the model's copy
// events per probe length and depth (heads.json retrieval.head_hits[layer][head], `layer` the
// attention map's row). "" when the run has no copy event or no grid.
std::string head_needle_section(const nlohmann::ordered_json& document, int layer, int head);

}  // namespace headscan
