#pragma once
// The causal evidence of `--ablation` (DESIGN.md, "Causal evidence") as the reports draw it: the
// top-level "ablation" object with its pruning curve, and each induction or duplicate-token head's
// "circuit". Without --ablation heads.json has neither, and the reports show nothing of them.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace headscan {

// One step of the pruning curve: the mean loss with `removed` heads (a share `fraction`) removed.
struct PruningPoint {
  double fraction = 0;
  std::optional<int> removed;
  std::optional<double> importance_order;  // least important heads removed first
  std::optional<double> random_order;      // mean over the random orders
  std::vector<double> random_orders;       // each random order's loss
};

struct AblationSummary {
  const nlohmann::ordered_json* json = nullptr;  // the "ablation" object itself
  std::string objective;                        // "next-token" or "masked-lm"; "" when absent
  std::optional<double> loss;                   // mean loss with nothing removed, nats
  std::optional<int> sequences;
  std::vector<PruningPoint> pruning;            // by increasing fraction
  std::size_t random_orders = 0;                // the most random orders any point has

  // The smallest and largest loss on the curve, or nullopt without points.
  std::optional<std::pair<double, double>> loss_range() const;
};

// A head of a circuit and the drop of a probe score when it is removed.
struct HeadLink {
  int layer = 0;  // read_circuit(): the model's layer index; in ReportData: the attention map
  int head = 0;
  double drop = 0;

  std::string id() const;  // "L0H3"
};

struct Circuit {
  std::string score;               // the probe score measured: "induction" or "duplicate_token"
  std::optional<double> baseline;  // that score with nothing removed
  std::vector<HeadLink> depends_on;  // earlier-layer heads, largest drop first
};

// The "ablation" object of heads.json, or nullopt when there is none (no --ablation).
std::optional<AblationSummary> read_ablation(const nlohmann::ordered_json& document);

// A head entry's "circuit", or nullopt. Links to heads outside layers × heads are left out.
std::optional<Circuit> read_circuit(const nlohmann::ordered_json& entry, int layers, int heads);

}  // namespace headscan
