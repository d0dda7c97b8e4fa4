// The ablation pass (--ablation): the ablation set's loss with nothing removed and with each head
// removed alone (ξ_h = 0), L·H + 1 evaluations of the set, several per forward call when the batch
// has room. ablation_loss = mean_x L_x(ξ_h = 0) − L_x(ξ = 1).
#include "analyzer/run/passes/pass.h"
#include "analyzer/run/run_state.h"

namespace headscan {

namespace {

class AblationPass : public Pass {
 public:
  const char* name() const override { return "ablation"; }
  std::optional<BatchSource> feeds() const override { return std::nullopt; }

  void run(RunState& state) override {
    const auto heads = static_cast<std::size_t>(state.shape.layers * state.shape.heads);
    std::vector<HeadFactors> sets(heads + 1, HeadFactors(heads, 1.0F));  // sets[0]: nothing removed
    for (std::size_t head = 0; head < heads; ++head) sets[head + 1][head] = 0.0F;
    const std::vector<std::vector<double>> losses = AblationRunner(state).losses(sets);
    AblationFindings& found = state.ablation;
    found.loss = mean_of(losses[0]);
    found.ablation_loss.assign(heads, 0.0);
    const std::size_t items = losses[0].size();
    for (std::size_t head = 0; head < heads; ++head) {
      double sum = 0;
      for (std::size_t item = 0; item < items; ++item) sum += losses[head + 1][item] - losses[0][item];
      found.ablation_loss[head] = items > 0 ? sum / static_cast<double>(items) : 0.0;
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_ablation_pass() { return std::make_unique<AblationPass>(); }

}  // namespace headscan
