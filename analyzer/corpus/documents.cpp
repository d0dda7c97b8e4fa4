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

  bool next(Document& document, DocumentCounts& counts) override {
    CorpusLine line;
    const bool found = reader_.next(line);
    if (found) {
      document.text = std::move(line.text);
      document.line_number = line.line_number;
      document.chunk = line.chunk;
      document.parse = nullptr;
    }
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

  bool next(Document& document, DocumentCounts& counts) override {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !queue_.empty(); });
    Item item = std::move(queue_.front());
    if (!item.last) queue_.pop_front();  // the last item stays: next() keeps answering false
    lock.unlock();
    changed_.notify_all();
    if (item.error) std::rethrow_exception(item.error);
    counts = item.counts;
    if (item.last) return false;
    document = std::move(item.document);
    return true;
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
          const LineParse parsed = parser_->parse_line(line.text);
          counts.sentences += parsed.sentences;
          counts.parsed_sentences += parsed.parsed;
          item.document.line_number = line.line_number;
          item.document.chunk = line.chunk;
          if (parsed.parsed > 0) item.document.parse = std::make_shared<const ParsedSentence>(parsed.parse);
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
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return stopping_ || queue_.size() < kParsedAhead; });
      if (stopping_) return;
      queue_.push_back(std::move(item));
      lock.unlock();
      changed_.notify_all();
      if (last) return;
    }
  }

  TextCorpusReader reader_;
  std::unique_ptr<LinkGrammarParser> parser_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Item> queue_;
  bool stopping_ = false;
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

}  // namespace headscan
