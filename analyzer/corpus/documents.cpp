#include "analyzer/corpus/documents.h"

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "analyzer/corpus/conllu.h"
#include "analyzer/corpus/text_lines.h"
#include "analyzer/errors.h"
#include "analyzer/corpus/link_grammar_parser.h"

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

// Documents parsed ahead of the consumer; bounds the memory that reading ahead takes.
constexpr std::size_t kParsedAhead = 64;

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

// Reads and parses lines on a thread of its own, at most kParsedAhead documents ahead.
class DocumentReader::ParsingSource : public DocumentReader::Source {
 public:
  ParsingSource(const std::string& path, std::optional<std::string> json_field, CorpusSlice slice)
      : reader_(path, std::move(json_field), slice), parser_(std::make_unique<LinkGrammarParser>()) {
    worker_ = std::thread([this] { produce(); });
  }

  ~ParsingSource() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    worker_.join();
  }

  std::uint64_t total_bytes() const { return reader_.total_bytes(); }
  const char* slice_mode() const { return reader_.lines().slice_mode(); }
  std::string expansion_warning() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return expansion_warning_;
  }

  bool next(Document& document, DocumentCounts& counts) override {
    std::unique_lock<std::mutex> lock(mutex_);
    long_line_pending_ = long_line_pending_ && !reading_long_line_;  // done with it: the worker reads on
    reading_long_line_ = false;
    changed_.notify_all();
    changed_.wait(lock, [this] { return !queue_.empty(); });
    Item item = std::move(queue_.front());
    if (!item.last) queue_.pop_front();  // the last item stays: next() keeps answering false
    reading_long_line_ = item.document.more;
    lock.unlock();
    changed_.notify_all();
    if (item.error) std::rethrow_exception(item.error);
    counts = item.counts;
    if (item.last) return false;
    document = std::move(item.document);
    return true;
  }

  // The worker waits while a long line is being read: until the next call to next(), its reader
  // is this thread's.
  bool next_part(std::string& part, DocumentCounts& counts) override {
    if (!reading_long_line_) return false;
    const bool found = reader_.next_part(part);
    copy_counts(reader_, counts);
    counts.sentences = sentences_;
    counts.parsed_sentences = parsed_sentences_;
    return found;
  }

 private:
  struct Item {
    Document document;
    DocumentCounts counts;
    bool last = false;
    std::exception_ptr error;
  };

  void produce() {
    DocumentCounts counts;
    for (;;) {
      Item item;
      try {
        CorpusLine line;
        if (reader_.next(line)) {
          if (!line.more) {  // the first part of a long line is not a sentence to parse
            const LineParse parsed = parser_->parse_line(line.text);
            counts.sentences += parsed.sentences;
            counts.parsed_sentences += parsed.parsed;
            if (parsed.parsed > 0) item.document.parse = std::make_shared<const ParsedSentence>(parsed.parse);
          }
          item.document.line_number = line.line_number;
          item.document.chunk = line.chunk;
          item.document.more = line.more;
          item.document.text = std::move(line.text);
        } else {
          item.last = true;
        }
        copy_counts(reader_, counts);
        item.counts = counts;
      } catch (...) {
        item.error = std::current_exception();
        item.last = true;
      }
      const bool last = item.last;
      const bool long_line = item.document.more;
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return stopping_ || queue_.size() < kParsedAhead; });
      if (stopping_) return;
      queue_.push_back(std::move(item));
      long_line_pending_ = long_line;
      if (expansion_warning_.empty()) expansion_warning_ = reader_.lines().expansion_warning();
      sentences_ = counts.sentences;
      parsed_sentences_ = counts.parsed_sentences;
      lock.unlock();
      changed_.notify_all();
      if (last) return;
      if (long_line) {  // its parts are read by the consumer, with this reader: wait until it is done
        lock.lock();
        changed_.wait(lock, [this] { return stopping_ || !long_line_pending_; });
        if (stopping_) return;
      }
    }
  }

  TextCorpusReader reader_;
  std::unique_ptr<LinkGrammarParser> parser_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Item> queue_;
  std::string expansion_warning_;  // the reader's, copied by the worker
  bool stopping_ = false;
  // A long line (Document::more) was queued and its parts are not all read: set by the worker,
  // which then waits; cleared by the consumer's next() after it took that line.
  bool long_line_pending_ = false;
  bool reading_long_line_ = false;  // the consumer's: the document it holds is a long line
  std::int64_t sentences_ = 0;      // the parser's counts when the long line was queued
  std::int64_t parsed_sentences_ = 0;
  std::thread worker_;
};

bool is_conllu_path(const std::string& path) { return corpus_extension(path) == ".conllu"; }

DocumentReader::DocumentReader(const std::string& path, const std::string& parser, const std::string& text_field,
                               CorpusSlice slice)
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
    auto source = std::make_unique<ParsingSource>(path, json_field, slice);
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

std::string DocumentReader::expansion_warning() const { return source_->expansion_warning(); }

std::string DocumentReader::text_warning() const { return source_->text_warning(); }

}  // namespace headscan
