#pragma once
// --probes: how many probes of each kind a run makes (README, "Probes" and "Needle probes"). No
// LibTorch: the option's parser (analyzer/cli/option_values.h) is fuzzed without it.

#include <cstdint>

namespace headscan {

// A kind's value: kPlannedProbes (the default plan), 0 (none) or N >= 1.
constexpr std::int64_t kPlannedProbes = -1;
// The most N may be, for either kind.
constexpr std::int64_t kMaxProbeCount = 1000;

struct ProbeBudget {
  // Induction probes (probes.h): the default kInductionProbes, or exactly N.
  std::int64_t induction = kPlannedProbes;
  // Needle probes (needle_plan.h): the cost plan, with at most N haystacks per (length, depth) cell.
  std::int64_t needles = kPlannedProbes;
};

}  // namespace headscan
