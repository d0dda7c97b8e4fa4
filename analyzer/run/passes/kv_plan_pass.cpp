// The KV-cache plan's causal check (--ablation; analyzer/run/kv_plan.h): the ablation set's loss
// with every head the plan puts on a streaming cache restricted to it, against the full model.
// Inside the graph, after the softmax, such a head's weights outside its sink (j < S) and window
// (i − W < j ≤ i) are set to 0 and each row renormalized: what masking those keys to −∞ before the
// softmax gives.
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "analyzer/run/kv_plan.h"
#include "analyzer/run/passes/ablation.h"
#include "analyzer/run/passes/pass.h"
#include "analyzer/run/run_state.h"
#include "heads/streaming.h"

namespace headscan {
namespace {

// The plan's streaming heads, per layer [H] bool (undefined: none in that layer).
std::vector<at::Tensor> streaming_heads(RunState& state, int kv_heads) {
  nlohmann::ordered_json document;
  document["model"] = {{"causal", state.shape.causal}, {"layers", state.shape.layers}, {"heads", state.shape.heads},
                       {"kv_heads", kv_heads}};
  document["thresholds"] = state.thresholds;
  document["heads"] = state.classifiers.finalize(state.thresholds, kv_heads);
  add_head_summary(document);
  std::vector<at::Tensor> layers(static_cast<std::size_t>(state.shape.layers));
  if (!document.contains("kv_plan")) return layers;
  const auto& plan = document.at("kv_plan").at("heads");
  for (int layer = 0; layer < state.shape.layers; ++layer) {
    at::Tensor heads = torch::zeros({state.shape.heads}, torch::kBool);
    bool any = false;
    for (int head = 0; head < state.shape.heads; ++head) {
      if (plan.at(static_cast<std::size_t>(layer)).at(static_cast<std::size_t>(head)) != "streaming") continue;
      heads[head] = true;
      any = true;
    }
    if (any) layers[static_cast<std::size_t>(layer)] = heads.to(state.model->device());
  }
  return layers;
}

class KvPlanPass : public Pass {
 public:
  const char* name() const override { return "kv_plan"; }
  std::optional<BatchSource> feeds() const override { return std::nullopt; }

  void run(RunState& state) override {
    AblationFindings& found = state.ablation;
    if (!state.shape.causal) {
      found.kv_plan_note = "a bidirectional model keeps no KV cache";
      return;
    }
    const int kv_heads = state.model->metadata().n_kv_heads.value_or(state.shape.heads);
    const std::vector<at::Tensor> restricted = streaming_heads(state, kv_heads > 0 ? kv_heads : state.shape.heads);
    const StreamingWindow window = streaming_window(state.thresholds);
    const AttentionEdit edit = [&](int layer, const at::Tensor& attention, std::int64_t first_row) -> at::Tensor {
      if (layer >= static_cast<int>(restricted.size()) || !restricted[static_cast<std::size_t>(layer)].defined()) {
        return at::Tensor();
      }
      // [Q, T] bool: the keys a streaming cache keeps for each query of the block.
      const auto positions = torch::TensorOptions(torch::kInt64).device(attention.device());
      const at::Tensor query = torch::arange(first_row, first_row + attention.size(-2), positions).unsqueeze(1);
      const at::Tensor key = torch::arange(attention.size(-1), positions).unsqueeze(0);
      const at::Tensor kept = key.lt(window.sink).logical_or(key.gt(query - window.window)).logical_and(key.le(query));
      const at::Tensor masked = attention * kept.to(attention.scalar_type());
      const at::Tensor renormalized = masked / masked.sum(-1, /*keepdim=*/true).clamp_min(1e-30);
      const at::Tensor heads = restricted[static_cast<std::size_t>(layer)].view({1, -1, 1, 1});
      return torch::where(heads, renormalized, attention);
    };
    const std::vector<double> losses = AblationRunner(state).edited_losses(edit);
    found.kv_plan_loss_delta = mean_of(losses) - found.loss;
  }
};

}  // namespace

std::unique_ptr<Pass> make_kv_plan_pass() { return std::make_unique<KvPlanPass>(); }

}  // namespace headscan
