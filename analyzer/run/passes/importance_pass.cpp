// The importance pass (--ablation): one backward pass per batch of the ablation set gives each
// head's importance, mean_x |∂L_x/∂ξ_{x,h}| at ξ = 1 (Michel et al. 2019), and each item's loss.
#include <fmt/format.h>

#include "analyzer/run/passes/pass.h"
#include "analyzer/run/run_state.h"

namespace headscan {
namespace {

class ImportancePass : public Pass {
 public:
  const char* name() const override { return "importance"; }
  std::optional<BatchSource> feeds() const override { return std::nullopt; }

  void run(RunState& state) override {
    if (state.ablation_items.empty()) {
      state.warnings.push_back(fmt::format(
          "--ablation: none of the first {} sequence(s) has anything to predict (a token after the first, or a "
          "non-special token to mask), so every causal number is 0; give a corpus with longer lines",
          state.options.ablation_sequences));
    }
    AblationFindings& found = state.ablation;
    AblationRunner(state, /*memory_rows=*/true).gradients(found.importance, found.item_losses);
    const auto items = static_cast<double>(state.ablation_items.size());
    for (double& importance : found.importance) importance = items > 0 ? importance / items : 0.0;
  }
};

}  // namespace

std::unique_ptr<Pass> make_importance_pass() { return std::make_unique<ImportancePass>(); }

}  // namespace headscan
