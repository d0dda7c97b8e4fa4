#pragma once
// A corpus given as "-": standard input copied once to a temporary file, because a run reads its
// corpus twice (document frequencies, then the model) and a pipe can be read only once. The file
// is removed when the object dies.

#include <string>
#include <string_view>

namespace headscan {

// `text` with every occurrence of `path` (a temporary file's) replaced by `name`, so that messages
// name an input as the user gave it.
std::string name_path(std::string text, const std::string& path, std::string_view name);

class SpooledInput {
 public:
  // Copies standard input to a new file in $TMPDIR (else /tmp). Throws std::runtime_error when it
  // cannot be written (e.g. the disk is full).
  SpooledInput();
  ~SpooledInput();
  SpooledInput(const SpooledInput&) = delete;
  SpooledInput& operator=(const SpooledInput&) = delete;

  const std::string& path() const { return path_; }

  // `text` with the temporary file's path replaced by "- (standard input)": messages name the
  // input as the user gave it.
  std::string named(std::string text) const;

  // Called in a catch block: throws the exception being handled again, its message named().
  [[noreturn]] void rethrow_named() const;

 private:
  std::string path_;
};

}  // namespace headscan
