#pragma once
// The words of one sequence and the dependency arcs between them, for the syntactic classifier
// (DESIGN.md, "Syntactic heads"). Word indices are local to the sequence: a long sentence cut into
// windows gives each window the words that have tokens in it, numbered from 0 in text order.

#include <string>
#include <vector>

namespace headscan {

struct WordArc {
  int dependent = 0;     // local word index
  int head = 0;          // local word index
  std::string relation;  // "nsubj", "amod", …
  int offset = 0;        // head − dependent in the sentence's word indices
};

struct SequenceWords {
  std::vector<int> token_word;  // per position of the sequence (BOS included): local word, -1 for none
  int words = 0;                // local words
  std::vector<WordArc> arcs;    // arcs with both ends in this sequence, root arcs excluded
};

}  // namespace headscan
