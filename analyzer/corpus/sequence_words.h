#pragma once
// The words of one sequence and the dependency arcs between them, for the syntactic classifier
// (DESIGN.md, "Syntactic heads"). Word indices are local to the sequence: a long sentence cut into
// windows gives each window the words that have tokens in it, numbered from 0 in text order. The
// words of a multiword token (CoNLL-U `3-4 don't`) share its tokens, so they are one local word:
// attention to or from any of them is the same, and a prediction of one is a prediction of all
// (README, "Syntactic heads"); arcs between two of them are not kept.

#include <string>
#include <vector>

namespace headscan {

struct WordArc {
  int dependent = 0;     // local word index
  int head = 0;          // local word index
  std::string relation;  // "nsubj", "amod", …
  int offset = 0;        // head − dependent in the sentence's word indices (multiword tokens' words counted)
};

struct SequenceWords {
  std::vector<int> token_word;  // per position of the sequence (BOS included): local word, -1 for none
  int words = 0;                // local words
  std::vector<WordArc> arcs;    // arcs with both ends in this sequence, root arcs excluded
};

}  // namespace headscan
