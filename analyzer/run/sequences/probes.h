#pragma once
// Synthetic probe sequences for induction and duplicate-token heads (DESIGN.md, induction):
// BOS + R repeated + the template's suffix when the shape has one, R made of distinct non-special
// tokens of the model's vocabulary.
//
// Sizing: kInductionProbes probes (--probes induction=N: N), 4 repeats of R with |R| <= 25, shorter
// when max_length requires, and 2 repeats when 4 do not fit. |R| varies across probes (from |R|max
// down to about 0.6 |R|max), so that a head that attends a fixed distance back by position alone
// cannot pass for an induction head. That guard sets the default count, 10: such a head matches
// the offset on the probes of one |R|, 12 % of the queries at |R|max = 25; at max_length 40 |R|
// takes only the values 9 to 6 and three probes of 10 have |R| = 9, 35 % of the queries, where 8
// probes would give 43 %, past the induction threshold 0.4.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/run/sequences/sequences.h"
#include "analyzer/tokenizers/tokenizer.h"

namespace at {
class Tensor;
}

namespace headscan {

struct ProbeSet {
  std::vector<Sequence> sequences;   // line_number = probe index
  std::vector<int> repeat_lengths;   // |R| of each probe
  int repeats = 0;
  std::string skipped_because;       // non-empty when no probes could be made
};

// The induction probes of a run without --probes induction=N: what the scores need (above).
constexpr int kInductionProbes = 10;

// `count` probes (1 or more); the repeats fill shape.room(): max_length less BOS and the suffix.
// Their tokens are ids below `model_vocabulary` (the model's logits' width, which a tokenizer with
// added tokens may exceed; 0: the tokenizer's vocabulary).
ProbeSet make_probes(const Tokenizer& tokenizer, const SequenceShape& shape, std::uint64_t seed,
                     int count = kInductionProbes, std::int64_t model_vocabulary = 0);

// Mean next-token loss of each repeat over the probes: entry r is the mean cross-entropy of the
// predictions of the tokens of repeat r+1 (the token at position t predicted from position t-1;
// the first token of repeat 1 is predicted from BOS, or skipped without BOS; the suffix is not a
// repeat).
class RepeatLoss {
 public:
  explicit RepeatLoss(int repeats);
  // logits: [B, T, V] of one batch of probes, in the batch's sequence order.
  void add(const at::Tensor& logits, const std::vector<Sequence>& batch, const ProbeSet& probes,
           bool has_bos);
  std::vector<double> mean() const;

 private:
  std::vector<double> sums_;
  std::vector<std::int64_t> counts_;
};

}  // namespace headscan
