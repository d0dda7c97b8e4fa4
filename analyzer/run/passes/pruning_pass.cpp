// The pruning pass (--ablation): heads removed cumulatively in increasing order of importance,
// 10 % of all heads per step (Michel et al. 2019, §4.2), the ablation set's mean loss at each step,
// beside the same for seeded random orders as a baseline.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "analyzer/run/passes/pass.h"
#include "analyzer/run/run_state.h"

namespace headscan {

namespace {

// A permutation of 0..count-1 by Fisher–Yates with its own generator: the same on every platform,
// unlike std::shuffle.
std::vector<std::size_t> random_order(std::size_t count, std::uint64_t seed) {
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 generator(seed);
  for (std::size_t i = count; i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(generator() % i);
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

// The first `removed` heads of `order`.
HeadFactors first_heads(const std::vector<std::size_t>& order, std::size_t removed) {
  HeadFactors set(order.size(), 1.0F);
  for (std::size_t k = 0; k < removed; ++k) set[order[k]] = 0.0F;
  return set;
}

class PruningPass : public Pass {
 public:
  const char* name() const override { return "pruning"; }
  std::optional<BatchSource> feeds() const override { return std::nullopt; }

  void run(RunState& state) override {
    AblationFindings& found = state.ablation;
    const std::size_t heads = found.importance.size();
    std::vector<std::vector<std::size_t>> orders;
    orders.emplace_back(heads);
    std::iota(orders[0].begin(), orders[0].end(), 0);
    std::stable_sort(orders[0].begin(), orders[0].end(),
                     [&](std::size_t a, std::size_t b) { return found.importance[a] < found.importance[b]; });
    for (int r = 0; r < kRandomPruningOrders; ++r) {
      orders.push_back(random_order(heads, state.options.seed * 1000 + static_cast<std::uint64_t>(r) + 1));
    }
    std::vector<std::int64_t> removed;
    for (int step = 0; step <= kPruningSteps; ++step) {
      removed.push_back(std::llround(static_cast<double>(step) * static_cast<double>(heads) / kPruningSteps));
    }
    // Each distinct set runs once: none removed is the ablation pass's loss, all removed is the
    // same set for every order, and small models repeat counts across steps.
    std::vector<HeadFactors> sets{HeadFactors(heads, 0.0F)};
    std::map<std::pair<std::size_t, std::int64_t>, std::size_t> set_of;  // (order, removed) → set
    for (std::size_t order = 0; order < orders.size(); ++order) {
      for (const std::int64_t count : removed) {
        if (count == 0 || count == static_cast<std::int64_t>(heads) || set_of.count({order, count}) > 0) continue;
        set_of[{order, count}] = sets.size();
        sets.push_back(first_heads(orders[order], static_cast<std::size_t>(count)));
      }
    }
    const std::vector<std::vector<double>> losses = AblationRunner(state).losses(sets);
    auto loss_at = [&](std::size_t order, std::int64_t count) {
      if (count == 0) return found.loss;
      if (count == static_cast<std::int64_t>(heads)) return mean_of(losses[0]);
      return mean_of(losses[set_of.at({order, count})]);
    };
    found.pruning.clear();
    for (int step = 0; step <= kPruningSteps; ++step) {
      PruningStep point;
      point.removed = removed[static_cast<std::size_t>(step)];
      point.fraction = heads > 0 ? static_cast<double>(point.removed) / static_cast<double>(heads) : 0.0;
      point.importance_order = loss_at(0, point.removed);
      for (std::size_t r = 1; r < orders.size(); ++r) point.random_orders.push_back(loss_at(r, point.removed));
      found.pruning.push_back(std::move(point));
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_pruning_pass() { return std::make_unique<PruningPass>(); }

}  // namespace headscan
