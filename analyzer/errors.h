#pragma once
// Errors raised by the library. main() catches them once and maps them to exit codes:
// InputError → 2 (bad usage or bad input: the user can fix it), anything else → 1.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace headscan {

// Bad input or usage. The message names the file (and line), what was expected, what was found
// and what to do.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A run stopped at the user's request (Ctrl-C in the Python module, through
// AnalysisOptions::check_interrupt). Passes through rethrow_with_context unchanged.
class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("interrupted") {}
};

// Throws InputError when `path` names a pipe, socket or device, before anything opens it: headscan
// reads its inputs whole or more than once, and opening a pipe that has no writer would wait
// forever with no word. `expected` begins the message ("expected a UTF-8 text corpus"). Missing
// files and directories are left to the caller's own checks.
void reject_pipe_or_device(const std::string& path, const std::string& expected);

// Prepends context ("while reading corpus.txt: ") to an error of the same kind.
[[noreturn]] void rethrow_with_context(const std::string& context);

// A text given where a path belongs, as messages quote it: whole up to kShownPathBytes, else its
// first kShownPathBytes bytes (cut at a character boundary), "…" and its length, so that a
// message never repeats kilobytes of something that cannot be a path.
constexpr std::size_t kShownPathBytes = 200;
std::string shown_path(std::string_view path);

}  // namespace headscan
