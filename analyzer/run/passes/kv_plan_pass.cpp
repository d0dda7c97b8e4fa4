// The KV-cache plan's causal check (--ablation; analyzer/run/kv_plan.h): the ablation set's loss
// with every head the plan puts on a streaming cache restricted to it, against the full model; and
// on the needle probes of each length, the share of the full model's copy events that the
// restricted model still makes, with its loss change on the copied tokens.
// Inside the graph, after the softmax, such a head's weights outside its sink (j < S) and window
// (i − W < j ≤ i) are set to 0 and each row renormalized: what masking those keys to −∞ before the
// softmax gives.
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "analyzer/errors.h"
#include "analyzer/run/kv_plan.h"
#include "analyzer/run/passes/ablation.h"
#include "analyzer/run/passes/pass.h"
#include "analyzer/run/run_state.h"
#include "analyzer/run/sequences/needles.h"
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

// The next-token loss (nats) of `tokens` [N] at the sequences [N] and rows [N] of `logits` [B, R, V].
at::Tensor token_loss(const at::Tensor& logits, const at::Tensor& rows, const at::Tensor& queries,
                      const at::Tensor& tokens) {
  const at::Tensor at_queries = logits.index({rows, queries}).to(torch::kDouble);  // [N, V]
  return -torch::log_softmax(at_queries, /*dim=*/-1).gather(1, tokens.unsqueeze(1)).squeeze(1);
}

// One batch of needle probes, once as the model is and once with `edit`: adds the full model's copy
// events, those the edited model still makes (its top prediction is the copied needle token) and
// the summed change of the copied token's next-token loss to `checked`. The first call's logits are
// let go before the second.
void check_needle_batch(RunState& state, const std::vector<Sequence>& batch, const std::vector<const NeedleProbe*>& probes,
                        const AttentionEdit& edit, KvPlanNeedles& checked) {
  std::int64_t batch_events = 0;
  // [N]: each copy event's sequence, its query's row in the logits, its token; the loss
  at::Tensor rows, queries, copied, full_loss;
  // The logits of the final needles' queries only, [B, R, V].
  const std::vector<std::int64_t> logits_rows = needle_query_rows(probes);
  const at::Tensor row_tensor = torch::tensor(logits_rows, torch::kInt64);
  const std::int64_t columns = state.columns(batch);
  {
    const ForwardOutput full = state.forward(batch, std::nullopt, 0, nullptr, nullptr, nullptr, nullptr, &row_tensor);
    if (!full.logits) throw InputError("the model returned no logits for the needle probes");
    std::vector<std::int64_t> events;
    // [B, T]: the key copied, or -1
    const at::Tensor targets = needle_targets(*full.logits, logits_rows, columns, probes, events);
    for (const std::int64_t count : events) batch_events += count;
    if (batch_events == 0) return;
    // The copied token of each event: the id at the key it copies.
    at::Tensor ids = torch::zeros({static_cast<std::int64_t>(batch.size()), columns}, torch::kInt64);
    for (std::size_t b = 0; b < batch.size(); ++b) {
      const auto& sequence = batch[b].ids;
      const auto count = std::min<std::int64_t>(columns, static_cast<std::int64_t>(sequence.size()));
      ids[static_cast<std::int64_t>(b)].slice(/*dim=*/0, 0, count).copy_(torch::tensor(
          std::vector<std::int64_t>(sequence.begin(), sequence.begin() + count), torch::kInt64));
    }
    const at::Tensor at_event = targets.ge(0).nonzero();  // [N, 2]: sequence, query
    rows = at_event.select(/*dim=*/1, 0);
    const at::Tensor at_query = at_event.select(/*dim=*/1, 1);
    copied = ids.to(targets.device()).gather(1, targets.clamp_min(0)).index({rows, at_query});
    // Each query's row in the logits.
    const at::Tensor row_of = torch::full({columns}, -1, torch::kInt64)
                                  .index_put_({row_tensor}, torch::arange(row_tensor.size(0), torch::kInt64));
    queries = row_of.to(targets.device()).index({at_query});
    full_loss = token_loss(*full.logits, rows, queries, copied);
  }
  const ForwardOutput restricted =
      state.forward(batch, std::nullopt, 0, nullptr, nullptr, nullptr, &edit, &row_tensor);
  if (!restricted.logits) throw InputError("the model returned no logits for the needle probes");
  const at::Tensor kept = restricted.logits->index({rows, queries}).argmax(/*dim=*/-1).eq(copied).sum();
  const at::Tensor delta = (token_loss(*restricted.logits, rows, queries, copied) - full_loss).sum();
  checked.copy_events += batch_events;
  checked.kept += kept.item<std::int64_t>();
  checked.loss_delta_sum += delta.item<double>();
}

// The needle probes the needle pass ran, in the (length, depth) cells where the model copied, in
// batches of at most --batch-size.
std::vector<KvPlanNeedles> check_needles(RunState& state, const AttentionEdit& edit) {
  std::vector<KvPlanNeedles> lengths;
  const NeedleSummary& summary = state.needle_summary;
  const auto batch_size = static_cast<int>(std::clamp<std::int64_t>(state.options.batch_size, 1, kHaystacks));
  for (std::size_t length = 0; length < state.needle_sets.size(); ++length) {
    const NeedleSet& set = state.needle_sets[length];
    KvPlanNeedles checked;
    checked.length = set.length;
    for (std::size_t depth = 0; depth < kNeedleDepths.size() && set.skipped_because.empty(); ++depth) {
      const NeedleCell& cell = summary.cells.at(length).at(depth);
      if (cell.events == 0) continue;
      for (int first = 0; first < cell.probes; first += batch_size) {
        std::vector<Sequence> batch;
        std::vector<const NeedleProbe*> probes;
        for (int haystack = first; haystack < std::min(cell.probes, first + batch_size); ++haystack) {
          batch.push_back(set.sequence(haystack, static_cast<int>(depth), state.text.shape));
          probes.push_back(&set.probe(haystack, static_cast<int>(depth)));
        }
        try {
          check_needle_batch(state, batch, probes, edit, checked);
        } catch (...) {
          rethrow_with_context(fmt::format("{} (the KV-cache plan's check on needle probes of {} tokens): ",
                                           state.model->path(), set.length));
        }
      }
    }
    lengths.push_back(checked);
  }
  return lengths;
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

    found.kv_plan_needles = check_needles(state, edit);
    std::int64_t events = 0;
    for (const KvPlanNeedles& checked : found.kv_plan_needles) events += checked.copy_events;
    if (events == 0) {
      found.kv_plan_needles.clear();
      found.kv_plan_needles_note =
          state.needle_summary.note.empty() ? "the model copied no needle" : state.needle_summary.note;
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_kv_plan_pass() { return std::make_unique<KvPlanPass>(); }

}  // namespace headscan
