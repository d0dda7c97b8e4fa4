#pragma once
// A corpus given as an iterable of strings (one document each), as a file the library reads by
// its path: JSON Lines, one object {"text": …} per document (so that a document may hold line
// breaks), written only as far as the analysis reads it (a GrowingFile, analyzer/corpus/
// growing_file.h): a generator is pulled no further than max_sequences needs, and Ctrl-C is seen
// between two documents. The file is unlinked as soon as it is created and read through
// /proc/self/fd, so that nothing is left behind however the run ends (without /proc, it is removed
// when the spool dies).

#include <cstddef>
#include <memory>
#include <string>

#include <pybind11/pybind11.h>

#include "analyzer/corpus/growing_file.h"
#include "analyzer/python/pending_error.h"

namespace headscan {

class DocumentSpool {
 public:
  // With the GIL held. What goes wrong while documents are pulled (the iterable raises, an item
  // is not a str or cannot be encoded as UTF-8, Ctrl-C, a full disk) is kept in `pending`, the
  // file ends there, and the run stops at its next check_interrupt.
  DocumentSpool(const pybind11::iterable& documents, PendingPythonError& pending);
  ~DocumentSpool();  // with the GIL held
  DocumentSpool(const DocumentSpool&) = delete;
  DocumentSpool& operator=(const DocumentSpool&) = delete;

  const std::string& path() const { return path_; }

 private:
  // Appends the next document; false at the iterable's end or when pulling failed.
  bool extend();
  void append(const std::string& line);

  pybind11::object iterator_;
  PendingPythonError& pending_;
  int fd_ = -1;
  std::string directory_;  // where the file was created, for messages
  std::string path_;       // /proc/self/fd/N, or the file's name where there is no /proc
  bool named_ = false;     // path_ is the file's name, removed when the spool dies
  std::size_t index_ = 0;  // of the next item
  bool ended_ = false;
  std::unique_ptr<GrowingFile> growing_;
};

// Where `text` cannot be encoded as UTF-8 (a lone surrogate, as errors="surrogateescape" or a
// string cut inside a surrogate pair leaves): "U+D800 at index 5", empty when it can.
std::string unencodable_character(pybind11::handle text);

}  // namespace headscan
