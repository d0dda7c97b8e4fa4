#pragma once
// The needle probes' lengths and their cost plan (the probes themselves: needles.h). No LibTorch.
//
// Lengths: --needle-lengths, else 4096, 8192, … doubling while below max_length, and max_length
// itself; only max_length when it is at most 4096 (a short run's probes are one length's 40).
//
// Cost plan, per length: rounds of probes, and a decision only at the end of a round, from the
// probes run, so that the same seed gives the same probes whatever the batch size.
//   round 0: haystack 0 at the deepest depth (90 %, the needle nearest the final one). Without a
//            copy event there the length stops: the model does not copy at that length.
//   round 1: haystack 0 at the other depths; round r >= 2: haystack r - 1 at every depth.
// After round 1 or later the length stops once it holds kNeedleLengthEvents copy events across its
// depths (what a retrieval score needs), or when every depth has run `most` haystacks (kHaystacks,
// or fewer with --probes needles=N). A model that never copies runs 1 probe per length, one that
// copies every needle token 5 (a probe holds at most 11 copy events), one that copies a few up to
// 5 * kHaystacks.

#include <array>
#include <cstdint>
#include <vector>

namespace headscan {

constexpr std::int64_t kNeedleLength = 12;
constexpr int kHaystacks = 8;
constexpr std::array<double, 5> kNeedleDepths = {0.1, 0.3, 0.5, 0.7, 0.9};
// The shortest probe: BOS, a haystack as long as a needle, and the two needles.
constexpr std::int64_t kShortestNeedleProbe = 1 + 3 * kNeedleLength;
// The default lengths double from here up to max_length.
constexpr std::int64_t kFirstNeedleLength = 4096;
// Copy events after which a length stops: as many as a retrieval score needs (kMinimumCopyEvents).
constexpr std::int64_t kNeedleLengthEvents = 20;

// The longest default probe when the run's max_length is headscan.json's rather than --max-length's:
// an export's max_length is the model's positions (often 131,072), and probes that long are the
// user's choice (--max-length or --needle-lengths), not a default's.
constexpr std::int64_t kLongestDefaultNeedleLength = 32768;

// The probe lengths of a run without --needle-lengths, up to `longest` (the run's max_length, at
// most kLongestDefaultNeedleLength when --max-length did not set it).
std::vector<std::int64_t> default_needle_lengths(std::int64_t longest);

// Checks --needle-lengths against the run's max_length; throws InputError saying which length is
// out of range and what to do: above max_length (the model's positions when max_length is
// headscan.json's), or below kShortestNeedleProbe.
void check_needle_lengths(const std::vector<std::int64_t>& lengths, std::int64_t max_length);

// The haystacks per (length, depth) cell at most: kHaystacks, or N of --probes needles=N
// (probe_budget.h; kPlannedProbes: the plan's own), at most kHaystacks.
int needle_haystacks_most(std::int64_t needles_budget);

struct NeedleProbeIndex {
  int haystack = 0;
  int depth = 0;  // index into kNeedleDepths
};

// The default run's needle probes are sized to its corpus, not to the model's positions: without
// --needle-lengths, --max-length or a --probes value for the needles, the lengths are
// default_needle_lengths() up to the corpus's longest window, and the probes' tokens (each probe's
// length, summed over the probes the plans run) at most this share of the corpus's tokens, at least
// one probe per length. A probe runs through the whole model, vocabulary projection included, where
// the corpus pass stops after the last attention layer, and again for its copy events: at a quarter
// of the corpus's tokens the needles cost about half the corpus pass.
constexpr double kNeedleCorpusShare = 0.25;

// The probes one length may run within `budget_tokens` (kNeedleCorpusShare of the corpus's tokens,
// shared equally by the lengths): at least 1.
int needle_probes_within(std::int64_t budget_tokens, std::int64_t length);

// The cost plan of one length (above).
class NeedleLengthPlan {
 public:
  // `most`: the haystacks per depth at most, 1 to kHaystacks (needle_haystacks_most); `probes`: the
  // probes at most (the default run's budget, needle_probes_within), a round cut short at it.
  explicit NeedleLengthPlan(int most = kHaystacks, int probes = kHaystacks * static_cast<int>(kNeedleDepths.size()));
  // The next round's probes, depth by depth; empty once the length is done.
  std::vector<NeedleProbeIndex> next_round() const;
  // Ends the round next_round() gave, with the copy events its probes held.
  void finish_round(std::int64_t events);
  // Whether the probe budget ended the length before its copy events or its haystacks did.
  bool cut_by_budget() const { return cut_by_budget_; }

 private:
  int most_;
  int probes_;
  int run_ = 0;  // probes run so far
  bool cut_by_budget_ = false;
  int rounds_ = 0;
  std::int64_t events_ = 0;
};

}  // namespace headscan
