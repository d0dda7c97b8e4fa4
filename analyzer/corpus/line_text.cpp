// A line's text: where a long line is cut into parts (line_part_end), its invalid UTF-8 repaired
// (repair_utf8) and where its bytes read so far can be repaired (repairable_prefix), and whether it
// is blank (text_lines.h, line_text.h).
#include "analyzer/corpus/line_text.h"

#include <string>
#include <string_view>
#include <utility>

#include "analyzer/corpus/text_lines.h"
#include "analyzer/tokenizers/unicode.h"

namespace headscan {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

bool is_continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

std::size_t repairable_prefix(std::string_view raw) {
  for (std::size_t back = 1; back <= 4 && back <= raw.size(); ++back) {
    if (!is_continuation_byte(raw[raw.size() - back])) return raw.size() - back;
  }
  return raw.size();
}

std::size_t line_part_end(std::string_view text, std::size_t begin) {
  const std::size_t limit = begin + kLinePartBytes;
  if (limit >= text.size()) return text.size();
  for (std::size_t end = limit; end > begin + 1; --end) {
    if (is_space(text[end]) && !is_space(text[end - 1])) return end;
  }
  std::size_t end = limit;
  while (end > begin + 1 && is_continuation_byte(text[end])) --end;
  return end;
}

std::size_t repair_utf8(std::string& text) {
  std::size_t pos = 0;
  while (pos < text.size()) {  // fast path: most lines are valid and are not copied
    const Utf8Char character = decode_utf8(text, pos);
    if (!character.valid) break;
    pos += character.length;
  }
  if (pos == text.size()) return 0;

  std::string repaired(text, 0, pos);
  std::size_t replacements = 0;
  while (pos < text.size()) {
    const Utf8Char character = decode_utf8(text, pos);
    if (character.valid) {
      repaired.append(text, pos, character.length);
    } else {
      repaired += "\xEF\xBF\xBD";  // U+FFFD for one maximal invalid subpart
      ++replacements;
    }
    pos += character.length;
  }
  text = std::move(repaired);
  return replacements;
}

bool is_blank_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

}  // namespace headscan
