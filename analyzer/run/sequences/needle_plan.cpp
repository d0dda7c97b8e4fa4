#include "analyzer/run/sequences/needle_plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "analyzer/errors.h"

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

int needle_cell_minimum(std::int64_t length) {
  const std::int64_t haystacks = (kNeedleCellTokens + length - 1) / std::max<std::int64_t>(1, length);
  return static_cast<int>(std::clamp<std::int64_t>(haystacks, 1, kHaystacks));
}

bool needle_cell_done(std::int64_t length, int probes, std::int64_t events) {
  if (probes >= kHaystacks) return true;
  if (probes < needle_cell_minimum(length)) return false;
  // A cell whose first haystacks gave no copy event stops: the model does not copy there.
  return events >= kNeedleCellEvents || events == 0;
}

int needle_cell_batch(std::int64_t length, int probes, std::int64_t batch_size) {
  const int most = static_cast<int>(std::clamp<std::int64_t>(batch_size, 1, kHaystacks));
  return std::min({most, std::max(needle_cell_minimum(length) - probes, 1), kHaystacks - probes});
}

}  // namespace headscan
