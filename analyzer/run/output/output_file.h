#pragma once
// A single file a command writes (headscan idf -o FILE): written to a temporary file in the same
// folder and renamed over the target when complete, so the target is whole or as it was. Only a
// regular file or a new path is written: a device node, FIFO or socket is refused with or without
// --force, and --force replaces only a file the command itself wrote (`is_own`), never another of
// the user's files. A symbolic link writes to the file it points to (the link stays), under the
// same rules; a dangling link is refused.

#include <functional>
#include <string>
#include <vector>

namespace headscan {

class OutputFile {
 public:
  // `what` names the kind of file for messages ("document-frequency file"); `is_own` says whether
  // an existing regular file is one of that kind. Throws InputError (before anything is written)
  // when the target is one of `inputs`, a directory or anything else that is not a regular file,
  // exists without `force`, is not the command's own file, or its folder is missing or not
  // writable.
  OutputFile(const std::string& path, bool force, const std::vector<std::string>& inputs, std::string what,
             const std::function<bool(const std::string&)>& is_own);

  // Has `write_to` write a temporary file beside the target (through CheckedFile), then renames it
  // over the target. The temporary file is removed when `write_to` throws, and the exception goes
  // on, naming the target rather than the temporary file.
  void write(const std::function<void(const std::string& path)>& write_to) const;

 private:
  std::string given_;   // as the user wrote it, for messages
  std::string target_;  // the file replaced: the link's target for a symbolic link
};

}  // namespace headscan
