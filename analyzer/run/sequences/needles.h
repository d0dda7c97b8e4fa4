#pragma once
// Needle probes for retrieval heads (heads/retrieval.cpp; Wu et al. 2024): haystacks of the
// corpus's own text that fill max_length, a needle of kNeedleLength distinct random non-special
// tokens inserted at each depth of kNeedleDepths, and the whole needle again at the end:
//   BOS + haystack[0, p) + needle + haystack[p, n) + needle,   p = round(depth · n).
// At final-needle token k (k ≥ 1, 1-based) the model can copy token k + 1 from the inserted needle:
// where its top prediction is that token, the query is a copy event, and a head hits when its
// argmax key is the inserted needle's token k + 1.

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

struct NeedleProbe {
  int haystack = 0;
  int depth = 0;                      // index into kNeedleDepths
  std::int64_t inserted = 0;          // position of the inserted needle's first token
  std::int64_t final_start = 0;       // position of the final needle's first token
  std::vector<std::int64_t> needle;   // its kNeedleLength ids
};

struct NeedleSet {
  std::vector<Sequence> sequences;    // line_number = probe index
  std::vector<NeedleProbe> probes;
  std::int64_t haystack_length = 0;   // tokens of text in each haystack
  std::string skipped_because;        // non-empty when no probes could be made
};

// What the needle pass found, for heads.json's "retrieval".
struct NeedleSummary {
  int probes = 0;
  std::int64_t haystack_length = 0;
  std::vector<std::int64_t> events;      // per depth: copy events
  std::vector<std::int64_t> candidates;  // per depth: queries at final-needle tokens 1 .. K − 1
  std::string note;                      // why retrieval is null, when it is
};

// The haystacks are cut from `text`, the corpus's non-special token ids in reading order (haystack
// h starts at h · n, wrapping around when the text is shorter than kHaystacks · n); each needle is
// drawn with `seed` from the non-special tokens that its haystack does not hold.
NeedleSet make_needles(const Tokenizer& tokenizer, const SequenceShape& shape, const std::vector<std::int64_t>& text,
                       std::uint64_t seed);

// How many of the corpus's text tokens make_needles() can use: kHaystacks haystacks' worth.
std::int64_t needle_text_wanted(const SequenceShape& shape);

// Per batch of needle probes (the sequences of `batch`, in order) and the model's logits [B, T, V]:
// [B, T] int64 on the logits' device, at each copy event the position of the key it copies, -1
// elsewhere. Adds the batch's copy events and candidate queries (final-needle tokens 1 .. K − 1) per
// depth to `events` and `candidates`.
at::Tensor needle_targets(const at::Tensor& logits, const std::vector<Sequence>& batch, const NeedleSet& needles,
                          std::vector<std::int64_t>& events, std::vector<std::int64_t>& candidates);

}  // namespace headscan
