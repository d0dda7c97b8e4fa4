#pragma once
// Streaming CoNLL-U reader (https://universaldependencies.org/format.html): one sentence at a
// time, in memory bounded by the longest sentence. Feeds syntactic-head analysis (DESIGN.md,
// "Syntactic heads"): each sentence becomes one sequence, its text rebuilt from the FORMs.

#include <cstddef>
#include <cstdint>
#include <string>

#include "analyzer/corpus/text_lines.h"
#include "analyzer/corpus/parsed_sentence.h"

namespace headscan {

struct ConlluSentence {
  // FORMs joined by single spaces, none after a word whose MISC has SpaceAfter=No (for a multiword
  // token `3-4`, its MISC applies to word 4) and none after the last word. Valid UTF-8.
  std::string text;
  std::size_t line_number = 0;  // 1-based line of the sentence's first line (comment or word)
  std::uint64_t chunk = 0;      // the chunk of its block of lines (CorpusSlice)
  // One word per integer ID, in ID order; spans are byte offsets of the FORMs in `text`. HEAD 0
  // (root), HEAD `_` and DEPREL `_` give head -1 and relation "" (no scored arc); otherwise head =
  // HEAD - 1 and relation = DEPREL without its subtype (`obl:tmod` → `obl`).
  ParsedSentence parse;
};

class ConlluReader {
 public:
  // Opens the file. Throws InputError if it is missing, a directory, unreadable, or binary (TextLineReader's checks). `slice`: the part a shard reads (CorpusSlice).
  explicit ConlluReader(const std::string& path, CorpusSlice slice = {});

  // Reads the next sentence that has at least one word; returns false at the end of the file.
  // Comments are ignored, multiword ranges `3-4` and empty nodes `5.1` are not words, "\r\n" is
  // accepted, invalid UTF-8 is replaced by U+FFFD and counted. Throws InputError
  // ("<path>:<line>: expected …, found …; …") on a malformed line or sentence: a line without 10
  // TAB-separated fields, a bad or out-of-order ID, an empty FORM, a HEAD that is not a word of the
  // sentence, or HEADs that form a cycle.
  bool next(ConlluSentence& sentence);

  const TextLineReader& lines() const { return lines_; }
  const std::string& path() const { return lines_.path(); }
  std::size_t lines_read() const { return lines_.lines_read(); }  // all lines, blank and comment included
  std::size_t sentences_read() const { return sentences_read_; }  // sentences returned by next()
  std::size_t lines_with_invalid_utf8() const { return lines_.lines_with_invalid_utf8(); }
  std::size_t invalid_utf8_replacements() const { return lines_.invalid_utf8_replacements(); }
  std::uint64_t bytes_read() const { return lines_.bytes_read(); }
  std::uint64_t total_bytes() const { return lines_.total_bytes(); }

 private:
  TextLineReader lines_;
  std::size_t sentences_read_ = 0;
};

}  // namespace headscan
