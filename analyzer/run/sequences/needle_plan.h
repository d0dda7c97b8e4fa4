#pragma once
// The needle probes' lengths and their cost plan (the probes themselves: needles.h). No LibTorch.
//
// Lengths: --needle-lengths, else 4096, 8192, … doubling while below max_length, and max_length
// itself; only max_length when it is at most 4096 (a short run's probes are one length's 40).
//
// Cost plan: a (length, depth) cell runs its haystacks in order until it has run at least
// ⌈kNeedleCellTokens / length⌉ of them (all kHaystacks up to 4096 tokens) and either holds
// kNeedleCellEvents copy events or holds none; at most kHaystacks. The decision depends only on
// the probes run, so the same seed gives the same probes whatever the batch size.

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
// Tokens of probes a (length, depth) cell runs before it may stop: all kHaystacks haystacks up to
// kFirstNeedleLength tokens.
constexpr std::int64_t kNeedleCellTokens = kHaystacks * kFirstNeedleLength;
// Copy events after which a cell stops: as many as a retrieval score needs (kMinimumCopyEvents).
constexpr std::int64_t kNeedleCellEvents = 20;

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

// The haystacks a (length, depth) cell runs at least, before it may stop (1 to kHaystacks).
int needle_cell_minimum(std::int64_t length);
// Whether a cell of probes `length` tokens long that has run `probes` haystacks with `events` copy
// events in all is done.
bool needle_cell_done(std::int64_t length, int probes, std::int64_t events);
// The haystacks of a cell's next batch, from haystack `probes` on: at most `batch_size`, and no more
// than the cell must run before needle_cell_done can next say it is done, so that a batch never
// runs a probe past the cell's end.
int needle_cell_batch(std::int64_t length, int probes, std::int64_t batch_size);

}  // namespace headscan
