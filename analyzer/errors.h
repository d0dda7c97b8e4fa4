#pragma once
// Errors raised by the library. main() catches them once and maps them to exit codes:
// InputError → 2 (bad usage or bad input: the user can fix it), anything else → 1.

#include <stdexcept>
#include <string>

namespace headscan {

// Bad input or usage. The message names the file (and line), what was expected, what was found
// and what to do.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Prepends context ("while reading corpus.txt: ") to an error of the same kind.
[[noreturn]] void rethrow_with_context(const std::string& context);

}  // namespace headscan
