#pragma once
// Tokens to words by character spans (DESIGN.md, "Syntactic heads"): a token belongs to the first
// word its span overlaps, whitespace not counted, so "▁the" and "Ġthe" belong to "the"; a token
// that overlaps no word (whitespace only, or a special token) belongs to none.

#include <memory>
#include <string_view>
#include <vector>

#include "analyzer/parsed_sentence.h"
#include "analyzer/sequences.h"
#include "analyzer/tokenizer.h"
#include "heads/sequence_words.h"

namespace headscan {

// Per token of `tokens` (a document's tokens, spans into `text`): index into sentence.words, or -1.
std::vector<int> align_tokens_to_words(const std::vector<Token>& tokens, std::string_view text,
                                       const ParsedSentence& sentence, const Tokenizer& tokenizer);

// Gives every window of a document (as make_sequences() cut it from the same tokens and shape)
// its words and the arcs whose two ends both have tokens in the window.
void attach_words(std::vector<Sequence>& sequences, const std::vector<int>& token_word,
                  const ParsedSentence& sentence, const SequenceShape& shape);

}  // namespace headscan
