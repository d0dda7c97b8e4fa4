#include "analyzer/corpus/documents.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <filesystem>

#include <fmt/format.h>

#include "analyzer/corpus/conllu.h"
#include "analyzer/corpus/text_lines.h"
#include "analyzer/errors.h"
#include "analyzer/corpus/parse_pool.h"

namespace headscan {

class DocumentReader::Source {
 public:
  virtual ~Source() = default;
  // The next document, and `counts` as they stand after it (or at the end of the corpus).
  virtual bool next(Document& document, DocumentCounts& counts) = 0;
  // The next part of a document that came with `more` (only text sources give such documents).
  virtual bool next_part(std::string& /*part*/, DocumentCounts& /*counts*/) { return false; }
  virtual std::string expansion_warning() const = 0;
  virtual std::string text_warning() const { return {}; }
  // Waits for the parses of the documents handed out and sets the counts' sentences.
  virtual void finish_parses(DocumentCounts& /*counts*/) {}
};

namespace {

// The line counts; documents_read is the caller's.
void copy_line_counts(const TextLineReader& lines, DocumentCounts& counts) {
  counts.lines_read = lines.lines_read();
  counts.lines_with_invalid_utf8 = lines.lines_with_invalid_utf8();
  counts.invalid_utf8_replacements = lines.invalid_utf8_replacements();
  counts.bytes_read = lines.bytes_read();
}

void copy_counts(const TextCorpusReader& reader, DocumentCounts& counts) {
  copy_line_counts(reader.lines(), counts);
  counts.documents_read = reader.documents_read();
}

}  // namespace

class DocumentReader::TextSource : public DocumentReader::Source {
 public:
  TextSource(const std::string& path, std::optional<std::string> json_field, CorpusSlice slice)
      : reader_(path, std::move(json_field), slice) {}
  const char* slice_mode() const { return reader_.lines().slice_mode(); }
  std::uint64_t total_bytes() const { return reader_.total_bytes(); }
  std::string expansion_warning() const override { return reader_.lines().expansion_warning(); }

  bool next(Document& document, DocumentCounts& counts) override {
    CorpusLine line;
    const bool found = reader_.next(line);
    if (found) {
      document.text = std::move(line.text);
      document.line_number = line.line_number;
      document.chunk = line.chunk;
      document.parse = nullptr;
      document.more = line.more;
    }
    copy_counts(reader_, counts);
    return found;
  }

  bool next_part(std::string& part, DocumentCounts& counts) override {
    const bool found = reader_.next_part(part);
    copy_counts(reader_, counts);
    return found;
  }

 private:
  TextCorpusReader reader_;
};

class DocumentReader::ConlluSource : public DocumentReader::Source {
 public:
  ConlluSource(const std::string& path, bool keep_trees, CorpusSlice slice)
      : reader_(path, slice), keep_trees_(keep_trees) {}
  const char* slice_mode() const { return reader_.lines().slice_mode(); }
  std::string expansion_warning() const override { return reader_.lines().expansion_warning(); }
  std::string text_warning() const override { return reader_.text_warning(); }
  std::uint64_t total_bytes() const { return reader_.total_bytes(); }

  // Every sentence has a word, so its text is never empty.
  bool next(Document& document, DocumentCounts& counts) override {
    ConlluSentence sentence;
    const bool found = reader_.next(sentence);
    if (found) {
      document.text = std::move(sentence.text);
      document.line_number = sentence.line_number;
      document.chunk = sentence.chunk;
      document.parse = keep_trees_ ? std::make_shared<const ParsedSentence>(std::move(sentence.parse)) : nullptr;
    }
    copy_line_counts(reader_.lines(), counts);
    counts.documents_read = reader_.sentences_read();
    counts.sentences = keep_trees_ ? static_cast<std::int64_t>(reader_.sentences_read()) : 0;
    counts.parsed_sentences = counts.sentences;
    return found;
  }

 private:
  ConlluReader reader_;
  bool keep_trees_;
};

// Reads lines as TextSource does and hands each to the parser threads as it is read: the caller
// gets the document at once, its parse to come.
class DocumentReader::ParsingSource : public DocumentReader::Source {
 public:
  ParsingSource(const std::string& path, std::optional<std::string> json_field, CorpusSlice slice,
                std::size_t threads)
      : reader_(path, std::move(json_field), slice), pool_(threads) {}

  std::uint64_t total_bytes() const { return reader_.total_bytes(); }
  const char* slice_mode() const { return reader_.lines().slice_mode(); }
  std::string expansion_warning() const override { return reader_.lines().expansion_warning(); }

  bool next(Document& document, DocumentCounts& counts) override {
    count_done_parses();
    CorpusLine line;
    const bool found = reader_.next(line);
    if (found) {
      // The first part of a long line is not a sentence to parse.
      document.pending_parse = line.more ? nullptr : pool_.submit(line.text);
      if (document.pending_parse) unfinished_.push_back(document.pending_parse);
      document.text = std::move(line.text);
      document.line_number = line.line_number;
      document.chunk = line.chunk;
      document.parse = nullptr;
      document.more = line.more;
    }
    set_counts(counts);
    return found;
  }

  bool next_part(std::string& part, DocumentCounts& counts) override {
    const bool found = reader_.next_part(part);
    set_counts(counts);
    return found;
  }

  void finish_parses(DocumentCounts& counts) override {
    for (const std::shared_ptr<PendingParse>& pending : unfinished_) add_counts(pending->get());
    unfinished_.clear();
    set_counts(counts);
  }

 private:
  void set_counts(DocumentCounts& counts) const {
    copy_counts(reader_, counts);
    counts.sentences = sentences_;
    counts.parsed_sentences = parsed_sentences_;
  }

  void add_counts(const LineParse& parse) {
    sentences_ += parse.sentences;
    parsed_sentences_ += parse.parsed;
  }

  // The parses done so far, in the order the documents were handed out; no wait.
  void count_done_parses() {
    while (!unfinished_.empty() && unfinished_.front()->done()) {
      add_counts(unfinished_.front()->get());
      unfinished_.pop_front();
    }
  }

  TextCorpusReader reader_;
  ParsePool pool_;
  std::deque<std::shared_ptr<PendingParse>> unfinished_;  // handed out, not yet counted
  std::int64_t sentences_ = 0;
  std::int64_t parsed_sentences_ = 0;
};

bool is_conllu_path(const std::string& path) { return corpus_extension(path) == ".conllu"; }

DocumentReader::DocumentReader(const std::string& path, const std::string& parser, const std::string& text_field,
                               CorpusSlice slice, std::size_t parser_threads)
    : path_(path) {
  if (parser != "link-grammar" && parser != "none") {
    throw InputError(fmt::format("--parser {}: unknown parser; use link-grammar (plain English text) or none", parser));
  }
  if (is_conllu_path(path)) {
    auto source = std::make_unique<ConlluSource>(path, parser != "none", slice);
    total_bytes_ = source->total_bytes();
    slice_mode_ = source->slice_mode();
    source_ = std::move(source);
    format_ = "conllu";
    parser_ = parser != "none" ? "conllu" : "none";
    return;
  }
  std::optional<std::string> json_field;
  if (is_jsonl_path(path)) {
    json_field = text_field;
    format_ = "jsonl";
  }
  if (parser == "link-grammar") {
    auto source = std::make_unique<ParsingSource>(path, json_field, slice, parser_threads);
    total_bytes_ = source->total_bytes();
    slice_mode_ = source->slice_mode();
    source_ = std::move(source);
    parser_ = "link-grammar";
  } else {
    auto source = std::make_unique<TextSource>(path, json_field, slice);
    total_bytes_ = source->total_bytes();
    slice_mode_ = source->slice_mode();
    source_ = std::move(source);
  }
}

DocumentReader::~DocumentReader() = default;

bool DocumentReader::next(Document& document) { return source_->next(document, counts_); }

bool DocumentReader::next_part(std::string& part) { return source_->next_part(part, counts_); }

void DocumentReader::finish_parses() { source_->finish_parses(counts_); }

std::string DocumentReader::expansion_warning() const { return source_->expansion_warning(); }

std::string DocumentReader::text_warning() const { return source_->text_warning(); }

}  // namespace headscan
