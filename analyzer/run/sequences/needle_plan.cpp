#include "analyzer/run/sequences/needle_plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "analyzer/errors.h"
#include "analyzer/run/sequences/probe_budget.h"

namespace headscan {

std::vector<std::int64_t> default_needle_lengths(std::int64_t longest) {
  std::vector<std::int64_t> lengths;
  for (std::int64_t length = kFirstNeedleLength; length < longest; length *= 2) lengths.push_back(length);
  lengths.push_back(longest);
  return lengths;
}

void check_needle_lengths(const std::vector<std::int64_t>& lengths, std::int64_t max_length) {
  for (const std::int64_t length : lengths) {
    if (length > max_length) {
      throw InputError(fmt::format("--needle-lengths: {} is longer than the run's max_length {} (--max-length, else "
                                   "headscan.json's max_length, the positions the model was exported for); give "
                                   "lengths up to {}, or a larger --max-length that the model's positions allow",
                                   length, max_length, max_length));
    }
    if (length < kShortestNeedleProbe) {
      throw InputError(fmt::format("--needle-lengths: {} is shorter than a needle probe can be: BOS, a haystack of {} "
                                   "tokens and two needles of {} take {}; give lengths from {} to max_length {}",
                                   length, kNeedleLength, kNeedleLength, kShortestNeedleProbe, kShortestNeedleProbe,
                                   max_length));
    }
  }
}

int needle_haystacks_most(std::int64_t needles_budget) {
  if (needles_budget == kPlannedProbes) return kHaystacks;
  return static_cast<int>(std::clamp<std::int64_t>(needles_budget, 1, kHaystacks));
}

int needle_probes_within(std::int64_t budget_tokens, std::int64_t length) {
  if (length <= 0) return 1;
  const std::int64_t most = kHaystacks * static_cast<std::int64_t>(kNeedleDepths.size());
  return static_cast<int>(std::clamp<std::int64_t>(budget_tokens / length, 1, most));
}

NeedleLengthPlan::NeedleLengthPlan(int most, int probes)
    : most_(std::clamp(most, 1, kHaystacks)), probes_(std::max(probes, 1)) {}

std::vector<NeedleProbeIndex> NeedleLengthPlan::next_round() const {
  const int deepest = static_cast<int>(kNeedleDepths.size()) - 1;
  if (rounds_ == 0) return {NeedleProbeIndex{0, deepest}};
  // After round r >= 1 every depth has run r haystacks.
  if (events_ == 0 || events_ >= kNeedleLengthEvents || rounds_ - 1 >= most_ || run_ >= probes_) return {};
  std::vector<NeedleProbeIndex> round;
  for (int depth = 0; depth <= deepest && run_ + static_cast<int>(round.size()) < probes_; ++depth) {
    if (rounds_ == 1 && depth == deepest) continue;  // round 0 ran it
    round.push_back(NeedleProbeIndex{rounds_ - 1, depth});
  }
  return round;
}

void NeedleLengthPlan::finish_round(std::int64_t events) {
  run_ += static_cast<int>(next_round().size());  // the round being finished
  ++rounds_;
  events_ += events;
  const bool more_wanted = events_ > 0 && events_ < kNeedleLengthEvents && rounds_ - 1 < most_;
  cut_by_budget_ = more_wanted && run_ >= probes_;
}

}  // namespace headscan
