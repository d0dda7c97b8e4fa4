#pragma once
// Streaming CoNLL-U reader (https://universaldependencies.org/format.html): one sentence at a
// time, in memory bounded by the longest sentence. Feeds syntactic-head analysis (DESIGN.md,
// "Syntactic heads"): each sentence becomes one sequence, its text as the treebank wrote it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/corpus/text_lines.h"
#include "analyzer/corpus/parsed_sentence.h"

namespace headscan {

struct ConlluSentence {
  // The surface: the FORMs of the multiword tokens (`3-4 don't`) and of the words outside them,
  // joined by single spaces, none after one whose MISC has SpaceAfter=No and none after the last;
  // the words inside a multiword token give no text (their FORMs and MISC are not read). Valid UTF-8.
  std::string text;
  std::size_t line_number = 0;  // 1-based line of the sentence's first line (comment or word)
  std::uint64_t chunk = 0;      // the chunk of its block of lines (CorpusSlice)
  // One word per integer ID, in ID order; spans are byte offsets of the FORMs in `text`, the words
  // of a multiword token all having its FORM's span (continues_multiword on all but the first).
  // HEAD 0 (root), HEAD `_` and DEPREL `_` give head -1 and relation "" (no scored arc); otherwise
  // head = HEAD - 1 and relation = DEPREL without its subtype (`obl:tmod` → `obl`).
  ParsedSentence parse;
};

class ConlluReader {
 public:
  // Opens the file. Throws InputError if it is missing, a directory, unreadable, or binary (TextLineReader's checks). `slice`: the part a shard reads (CorpusSlice).
  explicit ConlluReader(const std::string& path, CorpusSlice slice = {});

  // Reads the next sentence that has at least one word; returns false at the end of the file.
  // Multiword ranges `3-4` and empty nodes `5.1` are not words, "\r\n" is accepted, invalid UTF-8
  // is replaced by U+FFFD and counted. Of the comments only `# text` and `# sent_id` are read: a
  // sentence whose text differs from its `# text` is counted (text_warning()). Throws InputError
  // ("<path>:<line>: expected …, found …; …") on a malformed line or sentence: a line without 10
  // TAB-separated fields, a bad or out-of-order ID, an empty FORM, overlapping multiword ranges, a
  // HEAD that is not a word of the sentence, or HEADs that form a cycle.
  bool next(ConlluSentence& sentence);

  // Sentences read so far whose text differs from their `# text` comment (the treebank's words do
  // not spell its own text: a SpaceAfter=No missing or wrong, a FORM that differs).
  std::size_t text_mismatches() const { return text_mismatches_; }
  // A warning that counts them and names the first three by line and sent_id, quoting where the
  // first one differs; empty when there are none.
  std::string text_warning() const;

  const TextLineReader& lines() const { return lines_; }
  const std::string& path() const { return lines_.path(); }
  std::size_t lines_read() const { return lines_.lines_read(); }  // all lines, blank and comment included
  std::size_t sentences_read() const { return sentences_read_; }  // sentences returned by next()
  std::size_t lines_with_invalid_utf8() const { return lines_.lines_with_invalid_utf8(); }
  std::size_t invalid_utf8_replacements() const { return lines_.invalid_utf8_replacements(); }
  std::uint64_t bytes_read() const { return lines_.bytes_read(); }
  std::uint64_t total_bytes() const { return lines_.total_bytes(); }

 private:
  void note_text_mismatch(const ConlluSentence& sentence, const std::string& comment, const std::string& sent_id);

  TextLineReader lines_;
  std::size_t sentences_read_ = 0;
  std::size_t text_mismatches_ = 0;
  std::vector<std::string> mismatched_sentences_;  // the first few, "line 12 (sent_id s1)"
  std::string first_mismatch_;                     // where the first one differs
};

}  // namespace headscan
