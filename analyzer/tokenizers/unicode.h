#pragma once
// UTF-8 decoding and the Unicode properties the tokenizers need: well-formedness (Unicode 15,
// Table 3-7), White_Space, and, through utf8proc, case mapping and general categories (the
// definitions Rust's char methods use, since Hugging Face tokenizers are written in Rust).

#include <cstddef>
#include <string>
#include <string_view>

namespace headscan {

// A range of bytes [begin, end) in UTF-8 text.
struct ByteSpan {
  std::size_t begin = 0;
  std::size_t end = 0;
};

// One step through UTF-8 text: the character starting at a byte offset.
struct Utf8Char {
  char32_t code_point = 0;  // U+FFFD when !valid
  std::size_t length = 0;   // bytes: the sequence, or the maximal invalid subpart (always >= 1)
  bool valid = false;
  bool truncated = false;  // invalid only because the text ended inside a valid prefix
};

// Decodes the character at `pos` (< text.size()). An ill-formed sequence yields its maximal
// subpart (Unicode §3.9, "U+FFFD substitution of maximal subparts"): overlong forms, surrogates
// (ED A0..BF) and code points above U+10FFFF are ill-formed.
Utf8Char decode_utf8(std::string_view text, std::size_t pos);

void append_utf8(std::string& out, char32_t code_point);

// The White_Space property, as Rust's char::is_whitespace (used by Hugging Face tokenizers).
bool is_unicode_whitespace(char32_t c);

// Appends the full lowercase form of `c` (utf8proc's mapping plus the unconditional SpecialCasing
// entry, as Rust's char::to_lowercase): one character, except U+0130 İ → "i̇".
void append_lowercase(std::string& out, char32_t c);

// General category P* (Pc Pd Ps Pe Pi Pf Po).
bool is_unicode_punctuation(char32_t c);
// Hugging Face's BERT punctuation: ASCII punctuation (Rust's is_ascii_punctuation, which includes
// symbols such as $ + < = > ^ ` | ~) or P*.
bool is_bert_punctuation(char32_t c);
// Rust's char::is_numeric: Nd, Nl or No.
bool is_unicode_numeric(char32_t c);
// General category M* (Mn Mc Me): what Hugging Face's StripAccents removes.
bool is_unicode_mark(char32_t c);
// General category Mn: what BertNormalizer's strip_accents removes after NFD.
bool is_nonspacing_mark(char32_t c);
// General category C* (Cc Cf Cs Co Cn): BertNormalizer's control characters.
bool is_unicode_other(char32_t c);

}  // namespace headscan
