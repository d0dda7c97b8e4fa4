#include "analyzer/normalized_string.h"

#include <algorithm>
#include <stdexcept>

namespace headscan {

NormalizedString NormalizedString::from_original(std::string_view line, std::size_t begin, std::size_t end) {
  if (begin > end || end > line.size()) throw std::out_of_range("NormalizedString: span outside the line");
  NormalizedString normalized;
  normalized.text_.assign(line.substr(begin, end - begin));
  normalized.alignment_.reserve(end - begin);
  for (std::size_t pos = begin; pos < end;) {
    const std::size_t length = decode_utf8(line.substr(0, end), pos).length;
    normalized.alignment_.insert(normalized.alignment_.end(), length, ByteSpan{pos, pos + length});
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

}  // namespace headscan
