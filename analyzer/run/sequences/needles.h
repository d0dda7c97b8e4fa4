#pragma once
// Needle probes for retrieval heads (heads/retrieval.cpp; Wu et al. 2024): at each probe length,
// haystacks of the corpus's own text that fill the length, a needle of kNeedleLength distinct
// random non-special tokens inserted at each depth of kNeedleDepths, and the whole needle again at
// the end:
//   BOS + haystack[0, p) + needle + haystack[p, n) + needle,   p = round(depth · n).
// At final-needle token k (k ≥ 1, 1-based) the model can copy token k + 1 from the inserted needle:
// where its top prediction is that token, the query is a copy event, and a head hits when its
// argmax key is the inserted needle's token k + 1.
// The lengths and the cost plan: needle_plan.h.

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/run/sequences/needle_plan.h"
#include "analyzer/run/sequences/sequences.h"
#include "analyzer/tokenizers/tokenizer.h"

namespace at {
class Tensor;
}

namespace headscan {

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
// by depth, so that a run of one length draws the needles of a run of that length alone; ids below
// `model_vocabulary` (the model's logits' width; 0: the tokenizer's vocabulary).
std::vector<NeedleSet> make_needles(const Tokenizer& tokenizer, const SequenceShape& shape,
                                    const std::vector<std::int64_t>& text, const std::vector<std::int64_t>& lengths,
                                    std::uint64_t seed, std::int64_t model_vocabulary = 0);

// How many of the corpus's text tokens make_needles() can use: kHaystacks haystacks of the longest
// length.
std::int64_t needle_text_wanted(const SequenceShape& shape, const std::vector<std::int64_t>& lengths);

// The rows whose predictions say a batch's copy events: each probe's candidate queries (its final
// needle's tokens 1 .. kNeedleLength − 1), ascending and without repeats (the same kNeedleLength − 1
// rows for probes of one length).
std::vector<std::int64_t> needle_query_rows(const std::vector<const NeedleProbe*>& probes);

// Per batch of needle probes (`probes`, the batch's sequences in order, of `columns` tokens) and the
// model's logits at `rows` (needle_query_rows), [B, R, V]: [B, columns] int64 on the logits' device,
// at each copy event the position of the key it copies, -1 elsewhere. `events` gets each probe's
// copy events; each probe has kNeedleLength − 1 candidate queries.
at::Tensor needle_targets(const at::Tensor& logits, const std::vector<std::int64_t>& rows, std::int64_t columns,
                          const std::vector<const NeedleProbe*>& probes, std::vector<std::int64_t>& events);

}  // namespace headscan
