#pragma once
// Temporary files of the Python module, in $TMPDIR (else /tmp): stand-ins for what the user gave
// as a Python object (a live module, an iterable of strings) where the library reads a path.

#include <string>

namespace headscan {

// Creates "headscan-STEM-XXXXXX" + `suffix` and opens it for reading and writing; `path` is set to
// its name. Throws std::runtime_error naming the path when it cannot be created.
int create_temporary_file(const char* stem, const char* suffix, std::string& path);

// A temporary file, removed when the object dies.
class StandIn {
 public:
  StandIn(const char* stem, const char* suffix);
  ~StandIn();
  StandIn(const StandIn&) = delete;
  StandIn& operator=(const StandIn&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace headscan
