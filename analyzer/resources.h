#pragma once
// Files installed beside headscan's code, as the Python wheel lays them out (README, "Install with
// pip"): the headscan/ folder holds the Python module and share/headscan/, headscan/bin/ the
// executable. The SentencePiece support library, link-grammar's dictionaries and the plot fonts
// are looked up there first, so that the wheel runs on a machine that has none of them. Names
// under share/ start with headscan/, so that a headscan copied to /usr/local/bin finds nothing
// of /usr/local/share's by mistake.

#include <filesystem>
#include <string>

namespace headscan {

// `relative` under the folder of the executable or shared object that holds headscan's code, or
// under its parent; empty when neither has it.
std::filesystem::path installed_file(const std::string& relative);

}  // namespace headscan
