#include "analyzer/tokenizers/normalized_string.h"

#include <algorithm>
#include <stdexcept>

namespace headscan {

NormalizedString NormalizedString::from_original(std::string_view line, std::size_t begin, std::size_t end) {
  if (begin > end || end > line.size()) throw std::out_of_range("NormalizedString: span outside the line");
  NormalizedString normalized;
  normalized.text_.assign(line.substr(begin, end - begin));
  normalized.alignment_.reserve(end - begin);
  const std::string_view text = line.substr(0, end);
  for (std::size_t pos = begin; pos < end;) {
    const std::size_t length =
        static_cast<unsigned char>(text[pos]) < 0x80 ? 1 : decode_utf8(text, pos).length;  // ASCII: most text
    for (std::size_t k = 0; k < length; ++k) normalized.alignment_.push_back(ByteSpan{pos, pos + length});
    pos += length;
  }
  return normalized;
}

ByteSpan NormalizedString::original_span(std::size_t begin, std::size_t end) const {
  if (begin >= end || end > text_.size()) throw std::out_of_range("NormalizedString: empty or outside span");
  // min/max rather than first/last: a normalizer that reorders characters stays well-defined.
  const ByteSpan& first = alignment_[begin];
  const ByteSpan& last = alignment_[end - 1];
  return {std::min(first.begin, last.begin), std::max(first.end, last.end)};
}

NormalizedString NormalizedString::slice(std::size_t begin, std::size_t end) const {
  if (begin > end || end > text_.size()) throw std::out_of_range("NormalizedString: slice outside the text");
  NormalizedString part;
  part.text_ = text_.substr(begin, end - begin);
  part.alignment_.assign(alignment_.begin() + static_cast<std::ptrdiff_t>(begin),
                         alignment_.begin() + static_cast<std::ptrdiff_t>(end));
  return part;
}

NormalizedString NormalizedString::from_parts(std::string text, std::vector<ByteSpan> alignment) {
  if (text.size() != alignment.size()) throw std::invalid_argument("NormalizedString: one alignment per byte");
  NormalizedString result;
  result.text_ = std::move(text);
  result.alignment_ = std::move(alignment);
  return result;
}

void NormalizedString::prepend(std::string_view bytes) {
  if (text_.empty() || bytes.empty()) return;
  const ByteSpan first = alignment_.front();
  text_.insert(0, bytes);
  alignment_.insert(alignment_.begin(), bytes.size(), first);
}

NormalizedString::Builder::Builder(const NormalizedString& source) : source_(source) {
  text_.reserve(source.text_.size());
  alignment_.reserve(source.alignment_.size());
}

void NormalizedString::Builder::append(std::string_view bytes, std::size_t from, std::size_t to) {
  append_aligned(bytes, source_.original_span(from, to));
}

void NormalizedString::Builder::append_aligned(std::string_view bytes, ByteSpan original) {
  text_.append(bytes);
  alignment_.resize(text_.size(), original);
}

void NormalizedString::Builder::copy(std::size_t from, std::size_t to) {
  if (from > to || to > source_.text_.size()) throw std::out_of_range("NormalizedString: copy outside the text");
  text_.append(source_.text_, from, to - from);
  alignment_.insert(alignment_.end(), source_.alignment_.begin() + static_cast<std::ptrdiff_t>(from),
                    source_.alignment_.begin() + static_cast<std::ptrdiff_t>(to));
}

NormalizedString NormalizedString::Builder::finish() {
  NormalizedString result;
  result.text_ = std::move(text_);
  result.alignment_ = std::move(alignment_);
  return result;
}

}  // namespace headscan
