#include "analyzer/errors.h"

#include <exception>

namespace headscan {

void rethrow_with_context(const std::string& context) {
  try {
    throw;
  } catch (const InputError& e) {
    throw InputError(context + e.what());
  } catch (const std::exception& e) {
    throw std::runtime_error(context + e.what());
  }
}

}  // namespace headscan
