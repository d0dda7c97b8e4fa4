#pragma once
// Tokens to words by character spans (DESIGN.md, "Syntactic heads"): a token belongs to the first
// word its span overlaps, whitespace not counted, so "▁the" and "Ġthe" belong to "the"; a token
// that overlaps no word (whitespace only, or a special token) belongs to none, and so does a token
// whose own piece is whitespace only ("▁", "Ġ", "<0x0A>") even where a normalizer aligned it to
// the next character.

#include <string_view>
#include <vector>

#include "analyzer/corpus/parsed_sentence.h"
#include "analyzer/tokenizers/tokenizer.h"

namespace headscan {

// Per token of `tokens` (a document's tokens, spans into `text`): index into sentence.words, or -1.
// The words of a multiword token share its span: its tokens are given as its first word's, and
// belong to all its words (attach_words).
std::vector<int> align_tokens_to_words(const std::vector<Token>& tokens, std::string_view text,
                                       const ParsedSentence& sentence, const Tokenizer& tokenizer);

}  // namespace headscan
