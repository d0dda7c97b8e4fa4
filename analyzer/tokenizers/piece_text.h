#pragma once
// What a vocabulary entry spells as text, for head types that ask what kind of token a key is
// (punctuation heads, heads/separator.cpp).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/tokenizers/tokenizer.h"

namespace headscan {

// The text of token `id`: a byte-level piece's bytes ("Ġ," → " ,"), a SentencePiece byte piece's
// byte ("<0x2E>" → "."), SentencePiece's "▁" as a space, WordPiece's continuation "##" dropped
// ("##." → "."). Special tokens spell nothing: "".
std::string piece_text(const Tokenizer& tokenizer, std::int64_t id);

// Whether `text` holds at least one character and, white space aside, only punctuation (Unicode
// general category P*: Pc Pd Ps Pe Pi Pf Po). Symbols such as $ + < = > are not punctuation.
bool is_punctuation_text(std::string_view text);

// Per id of the vocabulary (vocab_size() entries): 1 where the token's text is only punctuation.
std::vector<std::uint8_t> punctuation_ids(const Tokenizer& tokenizer);

}  // namespace headscan
