// The importance pass (--ablation): one backward pass per batch of the ablation set gives each
// head's importance, mean_x |∂L_x/∂ξ_{x,h}| at ξ = 1 (Michel et al. 2019), and each item's loss.
#include "analyzer/run/pass.h"
#include "analyzer/run/run_state.h"

namespace headscan {
namespace {

class ImportancePass : public Pass {
 public:
  const char* name() const override { return "importance"; }
  std::optional<BatchSource> feeds() const override { return std::nullopt; }

  void run(RunState& state) override {
    AblationFindings& found = state.ablation;
    AblationRunner(state, /*memory_rows=*/true).gradients(found.importance, found.item_losses);
    const auto items = static_cast<double>(state.ablation_items.size());
    for (double& importance : found.importance) importance = items > 0 ? importance / items : 0.0;
  }
};

}  // namespace

std::unique_ptr<Pass> make_importance_pass() { return std::make_unique<ImportancePass>(); }

}  // namespace headscan
