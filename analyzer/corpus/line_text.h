#pragma once
// What TextLineReader (text_lines.cpp) and the chunks of a plain file (corpus_chunks.cpp) ask of a
// line's text, besides text_lines.h's line_part_end() and repair_utf8(). Internal to
// headscan_corpus.

#include <cstddef>
#include <string_view>

namespace headscan {

// A blank line: spaces and tabs, and a final carriage return. In CoNLL-U a blank line ends a block
// (SliceUnits::blocks).
bool is_blank_line(std::string_view line);

// Where `raw` (a line's bytes read so far, more to come) can be cut so that repairing its invalid
// UTF-8 in two halves gives what repairing it whole would: before its last byte that is not a
// continuation byte, when that byte is among the last four (it may start a character that the
// next bytes complete); else anywhere (a character has at most three continuation bytes).
std::size_t repairable_prefix(std::string_view raw);

}  // namespace headscan
