#pragma once
// What heads.json's heads say about long context and KV caches, computed from the document alone
// (so that a run and a merge of shards write the same): the sink rate (Gu et al. 2024, "When
// Attention Sink Emerges in Language Models": the share of heads whose first_token ≥ 0.3), and the
// KV-cache plan of DuoAttention (Xiao et al. 2024): per head `full` (a retrieval head, or a head that
// is not streaming) or `streaming` (a cache of the sink tokens and a recent window); a key/value
// group keeps a full cache when any of its query heads needs one.

#include <cstdint>
#include <filesystem>

#include <nlohmann/json_fwd.hpp>

namespace headscan {

constexpr double kSinkRateThreshold = 0.3;
// A plan whose restricted heads raise the ablation set's loss by more than this (nats) says so.
constexpr double kKvPlanLossBudget = 0.05;
// Context lengths at which the plan's KV memory saving is given.
constexpr std::int64_t kPlanContexts[] = {4096, 32768, 131072};

// Adds "summary" {"sink_rate", "sink_threshold", "sink_heads"} and, for a causal model, "kv_plan"
// {"sink_size", "recent_size", "heads" [layer][head] "full"/"streaming", "full_attention_heads"
// [layer][kv head] 1/0, "full_kv_heads", "kv_heads", "memory_saved" {context: share}} to
// `document` from its "model", "thresholds" and "heads". A row is an attention layer (a layer with
// an attention map), in the model's order: layers without attention have no KV cache to plan.
void add_head_summary(nlohmann::ordered_json& document);

// Writes the plan as DuoAttention's code loads it (duo_attn.utils.load_attn_pattern):
// `directory`/full_attention_heads.tsv, a row per layer of tab-separated 1 (full) or 0 per key/value
// head, and `directory`/config.json {"sink_size", "recent_size"}, with "layers" (the model's index
// of each row) when the model has layers without attention. Nothing when `document` has no plan.
void write_kv_plan_files(const nlohmann::ordered_json& document, const std::filesystem::path& directory);

}  // namespace headscan
