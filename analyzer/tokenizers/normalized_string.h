#pragma once
// Text on its way through a tokenizer's normalizers and pre-tokenizers, aligned to the original
// line so that every token can report the bytes it came from (as Hugging Face's NormalizedString).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/tokenizers/unicode.h"

namespace headscan {

class NormalizedString {
 public:
  // The bytes [begin, end) of `line`, not yet normalized: each byte is aligned to the original
  // character it belongs to (an invalid byte counts as a character of its own).
  static NormalizedString from_original(std::string_view line, std::size_t begin, std::size_t end);

  const std::string& text() const { return text_; }
  bool empty() const { return text_.empty(); }

  // The original bytes that the normalized bytes [begin, end) came from; begin < end.
  ByteSpan original_span(std::size_t begin, std::size_t end) const;

  // The normalized bytes [begin, end) with their alignment; both on character boundaries.
  NormalizedString slice(std::size_t begin, std::size_t end) const;

  // Per byte of text(): the original bytes it came from.
  const std::vector<ByteSpan>& alignment() const { return alignment_; }

  // A text and its alignment built elsewhere (one ByteSpan per byte). Throws
  // std::invalid_argument if the sizes differ.
  static NormalizedString from_parts(std::string text, std::vector<ByteSpan> alignment);

  // Where the text starts in the original line (Hugging Face's offsets_original().0); 0 for an
  // empty text.
  std::size_t original_begin() const { return alignment_.empty() ? 0 : alignment_.front().begin; }

  // Puts `bytes` in front of the text, aligned to its first character (as Hugging Face's
  // NormalizedString::prepend). Does nothing to an empty text.
  void prepend(std::string_view bytes);

  // Builds a rewritten text piece by piece from a source text, each new byte aligned to the
  // original bytes of the source bytes it replaces. finish() hands back the result.
  class Builder {
   public:
    explicit Builder(const NormalizedString& source);
    // Appends `bytes`, each aligned to the original span of the source bytes [from, to), from < to.
    void append(std::string_view bytes, std::size_t from, std::size_t to);
    // Appends `bytes`, each aligned to the original span `original`.
    void append_aligned(std::string_view bytes, ByteSpan original);
    // Appends the source bytes [from, to) unchanged, each keeping its own alignment.
    void copy(std::size_t from, std::size_t to);
    NormalizedString finish();

   private:
    const NormalizedString& source_;
    std::string text_;
    std::vector<ByteSpan> alignment_;
  };

  // Rewrites the text one character at a time: `rewrite(character, bytes, out)` appends the
  // replacement of `character` (whose normalized bytes are `bytes`) to `out`. Every appended byte
  // is aligned to the original span of the character it replaces, so a normalizer that changes
  // the byte length (Lowercase: "İ" → "i̇", 2 → 3 bytes) keeps offsets on the original text.
  template <typename Rewrite>
  void rewrite_characters(Rewrite&& rewrite) {
    std::string text;
    std::vector<ByteSpan> alignment;
    text.reserve(text_.size());
    alignment.reserve(alignment_.size());
    for (std::size_t pos = 0; pos < text_.size();) {
      const Utf8Char character = decode_utf8(text_, pos);
      const ByteSpan source = original_span(pos, pos + character.length);
      rewrite(character, std::string_view(text_).substr(pos, character.length), text);
      alignment.resize(text.size(), source);
      pos += character.length;
    }
    text_ = std::move(text);
    alignment_ = std::move(alignment);
  }

 private:
  std::string text_;
  std::vector<ByteSpan> alignment_;  // one per byte of text_: the original bytes it came from
};

}  // namespace headscan
