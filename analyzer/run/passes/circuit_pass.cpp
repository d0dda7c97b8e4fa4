// The circuit pass (--ablation): for each head labelled induction or duplicate-token, every head
// of the earlier layers is removed alone and the probes run again; the drop of the labelled head's
// probe score shows what it reads from (Olsson et al. 2022: an induction head needs a
// previous-token head before it, K-composition). Removing each induction head also shows how much
// the model's loss on repeats 2.. of the probes depends on it.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "analyzer/errors.h"
#include "analyzer/run/passes/pass.h"
#include "analyzer/run/run_state.h"
#include "heads/registry.h"

namespace headscan {
namespace {

// Drops smaller than this are float noise, not a dependency.
constexpr double kNoiseDrop = 1e-6;

// The mean probe loss over repeats 2.. (every repeat has the same number of predictions).
double later_repeats_loss(const std::vector<double>& repeat_loss) {
  return mean_of(std::vector<double>(repeat_loss.begin() + 1, repeat_loss.end()));
}

struct ProbeRun {
  nlohmann::ordered_json heads;     // the probe classifiers' heads, as ClassifierSet::finalize gives them
  std::vector<double> repeat_loss;  // empty when the model's output is not logits
};

// The probes with head `removed` (layer * heads + head) removed.
ProbeRun run_probes_without(RunState& state, std::size_t removed) {
  const ModelShape& shape = state.shape;
  std::vector<std::unique_ptr<HeadClassifier>> classifiers;
  classifiers.push_back(make_induction_classifier());
  classifiers.push_back(make_duplicate_token_classifier());
  ClassifierSet probe_classifiers(std::move(classifiers));
  probe_classifiers.begin(shape, state.thresholds);
  const bool with_loss = !state.model_summary.repeat_loss.empty();
  RepeatLoss repeat_loss(state.probes.repeats);
  const auto layer = removed / static_cast<std::size_t>(shape.heads);
  const auto head = static_cast<std::int64_t>(removed % static_cast<std::size_t>(shape.heads));
  std::int64_t batch_index = 0;
  for (const auto& batch : state.probe_batches()) {
    HeadScales scales(layer + 1);
    scales[layer] = torch::ones({static_cast<std::int64_t>(batch.size()), shape.heads},
                                torch::TensorOptions(torch::kFloat).device(state.model->device()));
    scales[layer].select(1, head).fill_(0.0);
    ForwardOutput output;
    try {
      output = state.forward(batch, BatchSource::probe, batch_index++, nullptr, &probe_classifiers, &scales);
    } catch (...) {
      rethrow_with_context(fmt::format("{} (probe sequences, L{}H{} removed): ", state.model->path(), layer, head));
    }
    if (with_loss) repeat_loss.add(*output.logits, batch, state.probes, state.text.shape.bos_id.has_value());
  }
  return ProbeRun{probe_classifiers.finalize(state.thresholds, shape.heads),
                  with_loss ? repeat_loss.mean() : std::vector<double>()};
}

class CircuitPass : public Pass {
 public:
  const char* name() const override { return "circuits"; }
  std::optional<BatchSource> feeds() const override { return std::nullopt; }

  void run(RunState& state) override {
    AblationFindings& found = state.ablation;
    const ModelShape& shape = state.shape;
    const auto head_count = static_cast<std::size_t>(shape.layers * shape.heads);
    found.repeat_loss_increase.assign(head_count, std::nullopt);
    if (state.probes.sequences.empty()) {
      // Why there are none: max_length, the vocabulary, or --probes induction=none.
      found.circuits_note = state.probe_summary.skipped_because.empty() ? "no probe sequences"
                                                                        : state.probe_summary.skipped_because;
      return;
    }
    // The labels of the whole run, from the probe scores it already has.
    const nlohmann::ordered_json heads = state.classifiers.finalize(state.thresholds, shape.heads);
    std::vector<std::size_t> targets;
    int deepest = 0;
    for (std::size_t index = 0; index < head_count; ++index) {
      const auto& head = heads.at(index);
      const bool induction = has_label(head, "induction");
      if (!induction && !has_label(head, "duplicate-token")) continue;
      HeadCircuit circuit;
      circuit.layer = head.at("layer").get<int>();
      circuit.head = head.at("head").get<int>();
      circuit.score = induction ? "induction" : "duplicate_token";
      circuit.baseline = head.at("scores").at(circuit.score).get<double>();
      found.circuits.push_back(std::move(circuit));
      targets.push_back(index);
      deepest = std::max(deepest, found.circuits.back().layer);
    }
    if (targets.empty()) {
      found.circuits_note = "no head is labelled induction or duplicate-token";
      return;
    }
    const std::vector<double>& repeat_loss = state.model_summary.repeat_loss;
    for (std::size_t removed = 0; removed < head_count; ++removed) {
      const int layer = static_cast<int>(removed / static_cast<std::size_t>(shape.heads));
      const bool induction = has_label(heads.at(removed), "induction");
      if (layer >= deepest && !(induction && !repeat_loss.empty())) continue;
      const ProbeRun run = run_probes_without(state, removed);
      for (HeadCircuit& circuit : found.circuits) {
        if (circuit.layer <= layer) continue;
        const std::size_t index = static_cast<std::size_t>(circuit.layer * shape.heads + circuit.head);
        // Probe scores are written to 6 decimals; so is their difference.
        const double ablated = run.heads.at(index).at("scores").at(circuit.score).get<double>();
        const double drop = std::round((circuit.baseline - ablated) * 1e6) / 1e6;
        if (drop > kNoiseDrop) {
          circuit.depends_on.push_back(CircuitLink{layer, static_cast<int>(removed % static_cast<std::size_t>(shape.heads)), drop});
        }
      }
      if (induction && !run.repeat_loss.empty() && repeat_loss.size() > 1) {
        found.repeat_loss_increase[removed] = later_repeats_loss(run.repeat_loss) - later_repeats_loss(repeat_loss);
      }
    }
    for (HeadCircuit& circuit : found.circuits) {
      std::stable_sort(circuit.depends_on.begin(), circuit.depends_on.end(),
                       [](const CircuitLink& a, const CircuitLink& b) { return a.drop > b.drop; });
      if (circuit.depends_on.size() > kCircuitLinks) circuit.depends_on.resize(kCircuitLinks);
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_circuit_pass() { return std::make_unique<CircuitPass>(); }

}  // namespace headscan
