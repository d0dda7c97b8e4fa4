#pragma once
// A sentence's words and dependency arcs, as the syntactic-head classifier uses them (DESIGN.md,
// "Syntactic heads"). Words carry their byte span in the document text, so tokens can be aligned
// to them by character spans. Produced by the CoNLL-U reader (gold or any parser's trees) and by
// the link-grammar parser (plain English text).

#include <cstddef>
#include <string>
#include <vector>

namespace headscan {

struct ParsedWord {
  std::size_t begin = 0;  // byte offset of the word in the document text
  std::size_t end = 0;    // one past its last byte
  int head = -1;          // index of its head word in ParsedSentence::words; -1: root or no arc
  std::string relation;   // main relation of the arc to its head ("nsubj", "obl"); empty: no arc
  // A later word of a multiword token (CoNLL-U `3-4 don't`: "n't" after "do"): it has the span of
  // the word before, the token's, and so the same tokens.
  bool continues_multiword = false;
};

// Words in text order. The words of one multiword token share its span; other spans do not
// overlap. Words without an arc still count as words: attention to them takes part in the argmax.
struct ParsedSentence {
  std::vector<ParsedWord> words;
};

}  // namespace headscan
