#pragma once
// GPT-2's byte-level alphabet and the "ByteLevel" pre-tokenizer of Hugging Face tokenizers (GPT-2,
// RoBERTa, Llama 3, Qwen): text is cut by the GPT-2 regex, then every byte of every word becomes
// one printable character, so that the vocabulary covers any input with 256 base symbols.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/tokenizers/normalized_string.h"
#include "analyzer/tokenizers/pre_tokenizers/pre_tokenizers.h"
#include "analyzer/tokenizers/text_pattern.h"

namespace headscan {

// The UTF-8 of the character that stands for `byte` (bytes_to_unicode in openai/gpt-2
// encoder.py): 0x21–0x7E, 0xA1–0xAC and 0xAE–0xFF stand for themselves, the other 68 bytes for
// U+0100 + their rank among them, e.g. the space 0x20 for "Ġ" (U+0120).
std::string_view byte_level_character(unsigned char byte);

// The bytes a piece spelled in that alphabet stands for ("Ġthe" → " the", "Ċ" → "\n"); nullopt
// when a character of `piece` is not one of the 256.
std::optional<std::string> from_byte_level(std::string_view piece);

// Every byte of `text` replaced by its character; each new character is aligned to the original
// character its byte belongs to, so all the bytes of "é" keep the span of "é".
NormalizedString to_byte_level(const NormalizedString& text);
// The same for the bytes [begin, end) of `text` only.
NormalizedString to_byte_level(const NormalizedString& text, std::size_t begin, std::size_t end);

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  // add_prefix_space: a space goes in front of text that does not start with one (every piece
  // between added tokens). use_regex: cut by the GPT-2 regex, otherwise keep the text whole.
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex);
  void split(const NormalizedString& text, std::vector<NormalizedString>& words) const override;

 private:
  bool add_prefix_space_;
  bool use_regex_;
  TextPattern gpt2_words_;
};

}  // namespace headscan
