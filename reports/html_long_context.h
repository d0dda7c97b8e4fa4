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

}  // namespace headscan
