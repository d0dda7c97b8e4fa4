#pragma once
// Streaming corpus reader: one line = one document. Reads a text file in bounded memory.

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace headscan {

// The part of a corpus one process reads (--shard I/N): all of it when count is 1. The shards of
// a corpus together read each document exactly once.
//
// A corpus is made of chunks, fixed by the file alone (not by the number of shards), and a
// shard reads whole chunks; the analysis never puts documents of two chunks in one batch. So
// every batch of a shard is a batch of the single run, and merged shards give the single run's
// numbers to the last bit (a model's float results depend on the batch a sequence is in).
//  - A plain file: chunk k holds the documents that start in bytes [k·S, (k+1)·S), with S =
//    chunk_bytes(size). Shard I of N reads chunks floor(C·I/N) to floor(C·(I+1)/N) − 1 of the C:
//    a contiguous byte range, entered at its first document start; it reads only its own bytes
//    (and a few before them, to find that start).
//  - A compressed file cannot be entered in the middle: chunk k holds documents k·D to
//    (k+1)·D − 1 (D = kChunkDocuments), and every shard reads the stream and keeps chunks
//    I, I + N, I + 2N, ...
// A document starts at every line, or for CoNLL-U (SliceUnits::blocks) at the line after a
// blank line: a block of lines ending in a blank line holds at most one sentence.
struct CorpusSlice {
  std::uint64_t index = 0;
  std::uint64_t count = 1;
  bool whole() const { return count <= 1; }
};

enum class SliceUnits { lines, blocks };

constexpr std::uint64_t kMinChunkBytes = std::uint64_t{64} << 10;  // 64 KiB: about 16,000 tokens
constexpr std::uint64_t kMaxChunks = std::uint64_t{1} << 16;
constexpr std::uint64_t kChunkDocuments = 256;

// S for a plain file of `size` bytes: 64 KiB, or more so that there are at most kMaxChunks.
std::uint64_t chunk_bytes(std::uint64_t size);

// A line longer than kLongLineBytes is read in parts, so that no line is ever held whole, however
// long it is (a compressed file of kilobytes can hold a line of gigabytes): its first part, then
// the rest in parts of about kLinePartBytes, each cut before the whitespace run nearest below
// kLinePartBytes (at a character boundary when there is none), so that no token of a tokenizer
// that splits at whitespace spans two parts. Lines that must be read whole (JSON Lines objects,
// CoNLL-U lines) may be at most kMaxWholeLineBytes long.
constexpr std::size_t kLongLineBytes = std::size_t{1} << 20;
constexpr std::size_t kLinePartBytes = std::size_t{256} << 10;
constexpr std::size_t kMaxWholeLineBytes = std::size_t{64} << 20;

// Where the part of `text` that starts at `begin` ends (kLinePartBytes above).
std::size_t line_part_end(std::string_view text, std::size_t begin);

struct CorpusLine {
  std::string text;              // valid UTF-8, no line break, never empty
  std::size_t line_number = 0;   // 1-based line number in the file
  std::uint64_t chunk = 0;       // the chunk of its document (CorpusSlice)
  bool more = false;             // `text` is the first part of a long line: next_part() gives the rest
};

// Reads a UTF-8 text file line by line in bounded memory: a leading byte order mark and "\r\n"
// endings are removed, and invalid UTF-8 is replaced by U+FFFD (one per maximal invalid subpart,
// as the Unicode standard recommends) and counted. A file compressed with gzip, zstd or xz (known
// by its first bytes, whatever its name) is decompressed as it is read, with libarchive. The
// corpus and CoNLL-U readers are built on it.
class TextLineReader {
 public:
  // `expected` says what the file should be ("expected a UTF-8 text corpus (one document per
  // line)"), `kind` what to give instead of a directory ("text file"). Throws InputError when it is
  // missing, a directory, unreadable, a pipe that cannot be read twice, or binary (NUL bytes, a
  // UTF-16 byte order mark, or mostly invalid UTF-8 in its first 64 KiB).
  // `slice` names the part of the file to read, `units` where its documents start.
  TextLineReader(const std::string& path, const std::string& expected, const std::string& kind,
                 CorpusSlice slice = {}, SliceUnits units = SliceUnits::lines);

  // The next line of the slice, empty ones included; false at the end of the slice. Throws
  // InputError for a line longer than kMaxWholeLineBytes.
  bool next(std::string& line);

  // The next line of the slice like next(), or only its first part when it is longer than
  // kLongLineBytes: then `more` is true and next_part() gives the rest.
  bool next_in_parts(std::string& part, bool& more);
  // The next part of the line next_in_parts() started; false after its last part. What a caller
  // does not read of a line is skipped by the next call to next() or next_in_parts().
  bool next_part(std::string& part);

  const std::string& path() const { return path_; }
  // The file as messages name it before a line number: the path, and for a byte range of a shard
  // where its line numbers count from ("c.txt (shard 2/4, lines counted from byte 5120)").
  const std::string& where() const { return where_; }
  std::size_t lines_read() const { return lines_read_; }    // lines of the slice read so far
  std::size_t line_number() const { return line_number_; }  // 1-based number of the last line read
  std::uint64_t chunk() const { return chunk_; }              // chunk of the last line's document
  // How the slice is read: "whole", "bytes" or "documents" (see CorpusSlice).
  const char* slice_mode() const { return slice_mode_; }
  std::size_t lines_with_invalid_utf8() const { return invalid_lines_; }
  std::size_t invalid_utf8_replacements() const { return replacements_; }
  // Bytes of the file read so far (of a compressed file: compressed bytes), for progress.
  std::uint64_t bytes_read() const;
  std::uint64_t total_bytes() const { return total_bytes_; }  // 0 when unknown
  const char* compression() const { return compression_; }    // "gzip", "zstd", "xz" or "none"
  // For a compressed file whose first 100 MB expand more than 1000-fold: a warning naming the
  // ratio (a few kilobytes that expand to gigabytes are more likely an attack than a corpus).
  std::string expansion_warning() const;

 private:
  // (Re)opens the file from its start, decompressing when it is compressed.
  void open();
  // Positions a plain file at the first document start of the slice's byte range.
  void enter_byte_range(CorpusSlice slice, SliceUnits units);
  // How reading a line's bytes stopped.
  enum class LineEnd { open, newline, file_end };
  // Appends to `out` at most `max` more bytes of the current line of the file; `extracted` is the
  // number of bytes taken from the file (the line break included).
  LineEnd read_raw(std::string& out, std::size_t max, std::size_t& extracted);
  // Starts the next line of the slice, its first bytes in text_ (more than `limit` of them, or the
  // whole line); false at the end of the slice.
  bool start_line(std::size_t limit);
  // Reads the current line on until text_ holds more than `want` bytes or the line has ended:
  // the line's byte order mark (first line) and final '\r' removed, invalid UTF-8 replaced.
  void fill(std::size_t want);
  // The next part of text_ (line_part_end), taken out of it.
  std::string take_part();
  // Drops what is left of the current line, reading it without holding it.
  void skip_rest_of_line();

  std::string path_;
  std::string where_;
  std::string expected_;
  const char* compression_ = "none";
  std::unique_ptr<std::streambuf> buffer_;
  std::istream in_{nullptr};
  CorpusSlice slice_;
  SliceUnits units_ = SliceUnits::lines;
  const char* slice_mode_ = "whole";
  std::uint64_t position_ = 0;      // offset of the next line in the (decompressed) file
  std::uint64_t range_start_ = 0;   // "bytes": the first document start of the range
  std::uint64_t range_end_ = 0;     // "bytes": documents starting here or later are another shard's
  bool at_document_start_ = true;   // whether the next line starts a document
  std::uint64_t document_index_ = 0;  // documents started so far
  bool chunks_by_bytes_ = false;      // a plain file: chunks of chunk_bytes_ bytes, else of documents
  std::uint64_t chunk_bytes_ = 0;
  std::uint64_t chunk_ = 0;
  std::size_t line_number_ = 0;
  std::size_t lines_read_ = 0;
  std::size_t invalid_lines_ = 0;
  std::size_t replacements_ = 0;
  std::uint64_t total_bytes_ = 0;
  // The current line: its bytes not yet repaired (a character cut by a read stays here until the
  // rest of it comes), its repaired text not yet handed out, and whether it was read to its end.
  std::string raw_;
  std::string text_;
  LineEnd end_ = LineEnd::newline;
  bool line_at_file_start_ = false;
  bool counting_ = false;         // the line is the slice's: its invalid UTF-8 counts
  std::size_t line_replacements_ = 0;
};

class TextCorpusReader {
 public:
  // Opens the corpus. Throws InputError if it is missing, unreadable, a directory, or binary
  // (NUL bytes or mostly invalid UTF-8 in its first 64 KiB). With `json_field` the file is JSON
  // Lines: each non-empty line is an object whose string field `json_field` is the document.
  explicit TextCorpusReader(const std::string& path, std::optional<std::string> json_field = std::nullopt,
                            CorpusSlice slice = {});

  // Reads the next non-empty document (TextLineReader's rules): a line, or a JSON Lines object's
  // field (which may hold line breaks; an empty string is skipped like an empty line). Returns false
  // at the end of the file. Throws InputError, naming the line, for a JSON Lines line that is not
  // an object with that string field. A text line longer than kLongLineBytes comes in parts
  // (line.more, next_part()); a JSON Lines line is read whole.
  bool next(CorpusLine& line);
  bool next_part(std::string& part) { return lines_.next_part(part); }

  const TextLineReader& lines() const { return lines_; }
  const std::string& path() const { return lines_.path(); }
  std::size_t lines_read() const { return lines_.lines_read(); }  // all lines, empty included
  std::size_t documents_read() const { return documents_read_; }  // non-empty lines returned
  std::size_t lines_with_invalid_utf8() const { return lines_.lines_with_invalid_utf8(); }
  std::size_t invalid_utf8_replacements() const { return lines_.invalid_utf8_replacements(); }
  std::uint64_t bytes_read() const { return lines_.bytes_read(); }
  std::uint64_t total_bytes() const { return lines_.total_bytes(); }

 private:
  // Replaces a JSON Lines line by its document; false when the document is empty.
  bool document_of_json_line(CorpusLine& line) const;

  TextLineReader lines_;
  std::optional<std::string> json_field_;
  std::size_t documents_read_ = 0;
};

// The extension that says a corpus's format, lowercase, after a compression extension (.gz, .zst,
// .xz): ".jsonl" for "c4.JSONL.gz". A GrowingFile's is its name's (growing_file.h).
std::string corpus_extension(const std::string& path);

// Whether `path` names a JSON Lines corpus (".jsonl", maybe compressed).
bool is_jsonl_path(const std::string& path);

// Refuses a text file with a NUL byte on any line (the corpus readers judge binary data by the
// first 64 KiB only): for small files shown whole, such as --examples prompts. `option` prefixes
// the message ("--examples"). Throws InputError naming the line and column.
void reject_nul_bytes(const std::string& path, const std::string& option, const std::string& expected);

// Replaces each maximal invalid UTF-8 subpart of `text` by U+FFFD; returns how many it replaced.
std::size_t repair_utf8(std::string& text);

}  // namespace headscan
