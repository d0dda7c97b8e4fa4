#pragma once
// The corpus as documents, each with its dependency parse when there is one: a ".conllu" file is
// read as CoNLL-U (one sentence = one document, its trees as given); a ".jsonl" file as JSON Lines
// (one object = one document); any other file as text, one line = one document. Text and JSON
// Lines documents are parsed by link-grammar unless the parser is "none" (DESIGN.md, "Syntactic
// heads"). Parsing runs on threads of its own (ParsePool) while the caller goes on: a document is
// handed out at once, its parse to come (Document::pending_parse).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "analyzer/corpus/parsed_sentence.h"
#include "analyzer/corpus/text_lines.h"

namespace headscan {

class PendingParse;

struct Document {
  std::string text;                              // valid UTF-8, never empty
  std::size_t line_number = 0;                   // 1-based line of the document in the file
  std::uint64_t chunk = 0;                       // never batched with another chunk's (CorpusSlice)
  std::shared_ptr<const ParsedSentence> parse;   // null when not parsed (or its parse is pending)
  // link-grammar's parse, running on the parser threads (PendingParse::get waits for it); null
  // when the document is not parsed by link-grammar. A parse with no parsed sentence gives no words.
  std::shared_ptr<PendingParse> pending_parse;
  // `text` is the first part of a line longer than kLongLineBytes: DocumentReader::next_part()
  // gives the rest (such a line is never parsed).
  bool more = false;
};

// Counts over the documents handed out so far.
struct DocumentCounts {
  std::size_t lines_read = 0;
  std::size_t documents_read = 0;
  std::size_t lines_with_invalid_utf8 = 0;
  std::size_t invalid_utf8_replacements = 0;
  std::uint64_t bytes_read = 0;
  // Of the documents handed out whose parse is done: all of them after finish_parses().
  std::int64_t sentences = 0;         // sentences the parser saw
  std::int64_t parsed_sentences = 0;  // sentences with a parse
};

class DocumentReader {
 public:
  // `parser`: "link-grammar" or "none"; CoNLL-U trees are used unless it is "none". A ".jsonl"
  // file is JSON Lines: one object per line, the document in its string field `text_field`.
  // `slice`: the part of the corpus a shard reads (CorpusSlice); counts are the slice's.
  // `parser_threads`: link-grammar's parsers (ParsePool), which read ahead of the caller.
  // Throws InputError for an unreadable corpus, an unknown parser, or a missing dictionary.
  DocumentReader(const std::string& path, const std::string& parser, const std::string& text_field = "text",
                 CorpusSlice slice = {}, std::size_t parser_threads = 1);
  ~DocumentReader();
  DocumentReader(const DocumentReader&) = delete;
  DocumentReader& operator=(const DocumentReader&) = delete;

  // The next document; false at the end. Throws InputError on malformed CoNLL-U. What was not
  // read of the previous document's parts is skipped.
  bool next(Document& document);
  // The next part of a document that came with `more`; false after its last part.
  bool next_part(std::string& part);
  // Waits for the parses of the documents handed out, so that counts() has all their sentences.
  void finish_parses();

  const std::string& path() const { return path_; }
  const char* format() const { return format_; }  // "text", "jsonl" or "conllu"
  const char* parser() const { return parser_; }  // "link-grammar", "conllu" or "none"
  const DocumentCounts& counts() const { return counts_; }
  std::uint64_t total_bytes() const { return total_bytes_; }  // of the slice; 0 when unknown
  const char* slice_mode() const { return slice_mode_; }      // TextLineReader::slice_mode()
  std::string expansion_warning() const;                       // TextLineReader::expansion_warning()
  std::string text_warning() const;  // CoNLL-U: ConlluReader::text_warning(); empty for other formats

 private:
  class Source;
  class TextSource;
  class ConlluSource;
  class ParsingSource;

  std::string path_;
  std::unique_ptr<Source> source_;
  DocumentCounts counts_;
  std::uint64_t total_bytes_ = 0;
  const char* format_ = "text";
  const char* parser_ = "none";
  const char* slice_mode_ = "whole";
};

// Whether `path` names a CoNLL-U corpus (".conllu", any case, maybe compressed: ".conllu.gz").
bool is_conllu_path(const std::string& path);

}  // namespace headscan
