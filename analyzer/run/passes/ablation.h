#pragma once
// What the causal passes share (--ablation; DESIGN.md, "Causal evidence"): the objective whose loss
// they measure, the ablation set (the first --ablation-sequences sequences of the corpus with what
// each one predicts), and the runner that evaluates the set's losses with heads scaled or removed.
//
// A head is scaled inside the instrumented graph: its attention probabilities are multiplied by ξ
// (analyzer/model/model.h, HeadScales), so ξ = 0 removes its output exactly, (0·A)·V = 0, and
// ∂L/∂ξ at ξ = 1 is its importance (Michel et al. 2019). The same graph serves every model: no
// code knows an architecture.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyzer/model/model.h"
#include "analyzer/run/sequences/sequences.h"

namespace headscan {

struct RunState;

struct AblationObjective {
  enum class Kind { next_token, masked_lm };
  Kind kind = Kind::next_token;
  std::int64_t mask_id = -1;  // masked_lm: the id that replaces masked tokens
  std::string mask_token;     // masked_lm: its text
  const char* name() const { return kind == Kind::next_token ? "next-token" : "masked-lm"; }
};

// The share of non-special tokens a masked-LM objective masks in each sequence.
constexpr double kMaskRate = 0.15;

// The objective for this model: next-token loss for a causal model that returns logits, masked-LM
// loss for a bidirectional one that returns logits and whose tokenizer has a mask token. Throws
// InputError saying why otherwise (no logits, no mask token, attention that is returned rather than
// computed in the graph, so it cannot be scaled).
AblationObjective choose_ablation_objective(const RunState& state);

// One sequence of the ablation set.
struct AblationItem {
  Sequence input;                     // what the model reads (masked-LM: masked tokens replaced)
  std::vector<std::int64_t> targets;  // per position: the id its logits predict, -1 for none
  std::int64_t predictions = 0;       // positions with a target
};

// The item of the `index`-th sequence of the corpus (0-based, corpus order), or nullopt when it has
// nothing to predict. Next-token: position t predicts the token at t+1, for every t+1 in 1..T-1.
// Masked-LM: max(1, round(0.15 n)) of the n non-special positions, drawn with `seed` and `index`,
// are replaced by the mask token and predicted.
std::optional<AblationItem> make_ablation_item(const Sequence& sequence, const AblationObjective& objective,
                                               std::size_t index, std::uint64_t seed);

// What the causal passes found; heads are indexed layer * heads + head.
struct PruningStep {
  double fraction = 0;                 // share of all heads removed
  std::int64_t removed = 0;            // heads removed
  double importance_order = 0;         // mean loss, the least important heads removed first
  std::vector<double> random_orders;   // mean loss for each seeded random order
};

struct CircuitLink {
  int layer = 0;
  int head = 0;
  double drop = 0;  // how much removing this head lowers the dependent head's probe score
};

struct HeadCircuit {
  int layer = 0;
  int head = 0;
  std::string score;                      // "induction" or "duplicate_token"
  double baseline = 0;                    // the score with nothing removed
  std::vector<CircuitLink> depends_on;    // largest drop first, at most kCircuitLinks
};

constexpr std::size_t kCircuitLinks = 5;
constexpr int kRandomPruningOrders = 3;
constexpr int kPruningSteps = 10;  // 10 % of all heads per step

// The KV-cache plan's check on the needle probes of one length (analyzer/run/sequences/needles.h):
// the full model's copy events in the probes the needle pass ran, and how the model does there with
// every streaming head restricted to its sink and window.
struct KvPlanNeedles {
  std::int64_t length = 0;       // tokens of each probe
  std::int64_t copy_events = 0;  // the full model's
  std::int64_t kept = 0;         // events where the restricted model still predicts the needle token
  // Σ over the events of the restricted model's next-token loss of the needle token less the full
  // model's (nats).
  double loss_delta_sum = 0;
};

struct AblationFindings {
  std::vector<double> item_losses;   // L_x with nothing removed (the gradient pass)
  std::vector<double> importance;    // mean_x |∂L_x/∂ξ_{x,h}|
  double loss = 0;                   // mean_x L_x with nothing removed (the ablation pass)
  std::vector<double> ablation_loss; // mean_x L_x(ξ_h = 0) − L_x(ξ = 1)
  std::vector<PruningStep> pruning;
  std::vector<HeadCircuit> circuits;
  // Per head: how much removing it raises the probe loss of repeats 2.. (induction heads only).
  std::vector<std::optional<double>> repeat_loss_increase;
  std::string circuits_note;         // why there are no circuits, when there are none
  // The KV-cache plan's cost (analyzer/run/kv_plan.h): mean_x L_x with every streaming head
  // restricted to its sink and window, less mean_x L_x; null when the plan was not checked.
  std::optional<double> kv_plan_loss_delta;
  std::string kv_plan_note;          // why it was not checked
  std::vector<KvPlanNeedles> kv_plan_needles;  // per needle probe length, ascending
  std::string kv_plan_needles_note;            // why the needle probes were not checked
};

// A factor per head (index layer * heads + head) for its attention probabilities: 1 keeps the
// head as it is, 0 removes it.
using HeadFactors = std::vector<float>;

constexpr double kGradientBytes = 2.0 * (1 << 30);

// The mean of the losses of the set's items (0 for none).
double mean_of(const std::vector<double>& values);

// Evaluates the ablation set (RunState::ablation_items) through the instrumented model.
class AblationRunner {
 public:
  // `memory_rows`: whether batches are also cut so that the attention a backward pass keeps,
  // about 12 bytes per weight of every layer (probabilities, their scaled copy, softmax's saved
  // output), stays under kGradientBytes; at least one sequence per batch.
  explicit AblationRunner(RunState& state, bool memory_rows = false);

  // The loss of every item with the heads scaled by each entry of `settings`:
  // result[setting][item]. Several settings share a forward call when the batch has room
  // (rows = items × settings ≤ --batch-size).
  std::vector<std::vector<double>> losses(const std::vector<HeadFactors>& settings);

  // The loss of every item with `edit` applied to the attention inside the model.
  std::vector<double> edited_losses(const AttentionEdit& edit);

  // One backward pass per batch with a scale per sequence and head: `importance_sums` (layers ×
  // heads) receives Σ_x |∂L_x/∂ξ_{x,h}| at ξ = 1, `losses` each item's loss at ξ = 1.
  void gradients(std::vector<double>& importance_sums, std::vector<double>& losses);

 private:
  RunState& state_;
  std::vector<std::vector<std::size_t>> batches_;  // item indices per forward batch
};

}  // namespace headscan

namespace headscan {

// Writes the causal passes' findings into heads.json: the "ablation" section, and per head the
// scores importance, importance_layer_normalized, ablation_loss (and ablation_repeat_loss on
// induction heads) and, on induction and duplicate-token heads, "circuit".
void add_ablation_json(nlohmann::ordered_json& document, const RunState& state);

}  // namespace headscan
