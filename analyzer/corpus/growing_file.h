#pragma once
// A corpus file that is written while it is read: its writer appends documents only when a reader
// has read all that is there (the Python package's iterable of strings, pulled no further than the
// analysis reads it). TextLineReader (text_lines.h) reads such a file through a GrowingFileBuffer,
// which asks the writer for more at the end of what is written instead of ending.

#include <functional>
#include <memory>
#include <streambuf>
#include <string>
#include <vector>

namespace headscan {

// Appends more to the file; false when its source has ended (nothing more will come). Called from
// whichever thread reads the file (the corpus may be parsed on a thread of its own), one call at a
// time. It must not throw (the reader's stream would take it for a read error): a writer that
// fails keeps why, ends the file and says so to its caller.
using FileExtender = std::function<bool()>;

// While it lives, readers of `path` read it as a growing file whose end `extend` moves, in the
// format that `name`'s extension says (corpus_extension(): "corpus.jsonl"), for a path that has
// none (/proc/self/fd/N, a file already removed from its folder).
class GrowingFile {
 public:
  GrowingFile(std::string path, std::string name, FileExtender extend);
  ~GrowingFile();
  GrowingFile(const GrowingFile&) = delete;
  GrowingFile& operator=(const GrowingFile&) = delete;

 private:
  std::string path_;
};

// Whether `path` is a GrowingFile's (its size then says only what is written so far).
bool is_growing_file(const std::string& path);
// The name a GrowingFile at `path` was given; empty when `path` is not one.
std::string growing_file_name(const std::string& path);

// The file at `path`, read from its start; at the end of what is written, its GrowingFile's
// extender is asked for more. Null when `path` is not a growing file. Throws std::runtime_error
// when the file cannot be opened.
std::unique_ptr<std::streambuf> open_growing_file(const std::string& path);

class GrowingFileBuffer : public std::streambuf {
 public:
  GrowingFileBuffer(const std::string& path, std::shared_ptr<FileExtender> extend);
  ~GrowingFileBuffer() override;
  GrowingFileBuffer(const GrowingFileBuffer&) = delete;
  GrowingFileBuffer& operator=(const GrowingFileBuffer&) = delete;

 protected:
  int_type underflow() override;

 private:
  int fd_ = -1;
  std::shared_ptr<FileExtender> extend_;
  std::vector<char> buffer_;
};

}  // namespace headscan
