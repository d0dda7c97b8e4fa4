#include "analyzer/resources.h"

#include <dlfcn.h>

namespace headscan {

std::filesystem::path installed_file(const std::string& relative) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&installed_file), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code error;
  // For the executable itself dladdr gives argv[0], which may be a bare name found on PATH.
  const std::string name = info.dli_fname;
  const std::filesystem::path object = name.find('/') == std::string::npos
                                           ? std::filesystem::read_symlink("/proc/self/exe", error)
                                           : std::filesystem::canonical(name, error);
  if (error) return {};
  for (const std::filesystem::path& folder : {object.parent_path(), object.parent_path().parent_path()}) {
    const std::filesystem::path candidate = folder / relative;
    if (std::filesystem::exists(candidate, error)) return candidate;
  }
  return {};
}

}  // namespace headscan
