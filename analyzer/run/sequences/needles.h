#pragma once
// Needle probes for retrieval heads (heads/retrieval.cpp; Wu et al. 2024): at each probe length,
// haystacks of the corpus's own text that fill the length, a needle of kNeedleLength distinct
// random non-special tokens inserted at each depth of kNeedleDepths, and the whole needle again at
// the end:
//   BOS + haystack[0, p) + needle + haystack[p, n) + needle,   p = round(depth · n).
// At final-needle token k (k ≥ 1, 1-based) the model can copy token k + 1 from the inserted needle:
// where its top prediction is that token, the query is a copy event, and a head hits when its
// argmax key is the inserted needle's token k + 1.
//
// Cost plan: a (length, depth) cell runs its haystacks in order until it has run at least
// ⌈kNeedleCellTokens / length⌉ of them (all kHaystacks up to 4096 tokens) and either holds
// kNeedleCellEvents copy events or holds none; at most kHaystacks. The decision depends only on
// the probes run, so the same seed gives the same probes whatever the batch size.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/run/sequences/sequences.h"
#include "analyzer/tokenizers/tokenizer.h"

namespace at {
class Tensor;
}

namespace headscan {

constexpr std::int64_t kNeedleLength = 12;
constexpr int kHaystacks = 8;
constexpr std::array<double, 5> kNeedleDepths = {0.1, 0.3, 0.5, 0.7, 0.9};
// The shortest probe: BOS, a haystack as long as a needle, and the two needles.
constexpr std::int64_t kShortestNeedleProbe = 1 + 3 * kNeedleLength;
// The default lengths double from here up to max_length (default_needle_lengths).
constexpr std::int64_t kFirstNeedleLength = 4096;
// Tokens of probes a (length, depth) cell runs before it may stop: all kHaystacks haystacks up to
// kFirstNeedleLength tokens, so that a run of max_length ≤ 4096 runs today's 40 probes.
constexpr std::int64_t kNeedleCellTokens = kHaystacks * kFirstNeedleLength;
// Copy events after which a cell stops: as many as a retrieval score needs (kMinimumCopyEvents).
constexpr std::int64_t kNeedleCellEvents = 20;

// The probe lengths of a run without --needle-lengths: 4096, 8192, … doubling while below
// max_length, then max_length itself; just max_length when it is at most 4096.
std::vector<std::int64_t> default_needle_lengths(std::int64_t max_length);

// Checks --needle-lengths (sorted, distinct) against the run's max_length; throws InputError
// saying which length is out of range and what to do: above max_length (the model's positions
// when max_length is headscan.json's), or below kShortestNeedleProbe.
void check_needle_lengths(const std::vector<std::int64_t>& lengths, std::int64_t max_length);

// The haystacks a (length, depth) cell runs at least, before it may stop (1 to kHaystacks).
int needle_cell_minimum(std::int64_t length);
// Whether a cell of probes `length` tokens long that has run `probes` haystacks with `events` copy
// events in all is done (the cost plan above).
bool needle_cell_done(std::int64_t length, int probes, std::int64_t events);

struct NeedleProbe {
  int haystack = 0;
  int depth = 0;                      // index into kNeedleDepths
  std::int64_t inserted = 0;          // position of the inserted needle's first token
  std::int64_t final_start = 0;       // position of the final needle's first token
  std::vector<std::int64_t> needle;   // its kNeedleLength ids
};

// One length's probes: probe h · kNeedleDepths.size() + d is haystack h at depth d.
struct NeedleSet {
  std::int64_t length = 0;                          // tokens of each probe
  std::int64_t haystack_length = 0;                 // tokens of text in each haystack
  std::vector<std::vector<std::int64_t>> haystacks;  // kHaystacks of haystack_length ids
  std::vector<NeedleProbe> probes;
  std::string skipped_because;        // non-empty when no probes could be made

  const NeedleProbe& probe(int haystack, int depth) const;
  // The probe's sequence (line_number = its index in `probes`), built when it runs: a run at long
  // context holds only its haystacks, not 40 sequences of every length.
  Sequence sequence(int haystack, int depth, const SequenceShape& shape) const;
};

// What the needle pass found at one (length, depth) cell.
struct NeedleCell {
  int probes = 0;
  std::int64_t candidates = 0;  // queries at final-needle tokens 1 .. K − 1
  std::int64_t events = 0;      // copy events among them
};

// What the needle pass found, for heads.json's "retrieval".
struct NeedleSummary {
  std::vector<std::int64_t> lengths;          // the probe lengths, ascending
  std::vector<std::int64_t> haystack_length;  // per length
  std::vector<std::vector<NeedleCell>> cells;  // [length][depth]
  // Per attention layer, head, length and depth, flat in that order: the head's retrieval hits
  // (its argmax key is the copied needle token) among the cell's copy events.
  std::vector<std::int64_t> head_hits;
  int layers = 0;
  int heads = 0;
  std::string note;  // why retrieval is null, when it is

  int probes() const;
  std::int64_t events() const;
  std::int64_t& hits(int layer, int head, std::size_t length, std::size_t depth);
  std::int64_t hits(int layer, int head, std::size_t length, std::size_t depth) const;
};

// The probes of every length of `lengths` (ascending). The haystacks are cut from `text`, the
// corpus's non-special token ids in reading order (haystack h of a length starts at h · n, wrapping
// around when the text is shorter than kHaystacks · n); each needle is drawn with `seed` from the
// non-special tokens that its haystack does not hold, length by length, haystack by haystack, depth
// by depth, so that a run of one length draws the needles of a run of that length alone.
std::vector<NeedleSet> make_needles(const Tokenizer& tokenizer, const SequenceShape& shape,
                                    const std::vector<std::int64_t>& text, const std::vector<std::int64_t>& lengths,
                                    std::uint64_t seed);

// How many of the corpus's text tokens make_needles() can use: kHaystacks haystacks of the longest
// length.
std::int64_t needle_text_wanted(const SequenceShape& shape, const std::vector<std::int64_t>& lengths);

// Per batch of needle probes (`probes`, the batch's sequences in order) and the model's logits
// [B, T, V]: [B, T] int64 on the logits' device, at each copy event the position of the key it
// copies, -1 elsewhere. `events` gets each probe's copy events; each probe has kNeedleLength − 1
// candidate queries.
at::Tensor needle_targets(const at::Tensor& logits, const std::vector<const NeedleProbe*>& probes,
                          std::vector<std::int64_t>& events);

}  // namespace headscan
