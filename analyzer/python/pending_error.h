#pragma once
// What Python code raised (a progress callback, the iterable of documents, Ctrl-C's
// KeyboardInterrupt), or the bridge failed with, while the run went on without the GIL: kept, the
// run stopped with Interrupted at its next check, and raised again once the run has unwound.

#include <atomic>
#include <exception>
#include <optional>
#include <utility>

#include <pybind11/pybind11.h>

#include "analyzer/errors.h"

namespace headscan {

class PendingPythonError {
 public:
  // Keeps `raised` and stops the run (with the GIL held).
  [[noreturn]] void stop(pybind11::error_already_set&& raised) {
    keep(std::move(raised));
    throw Interrupted();
  }
  // Keep what went wrong without throwing, for code that must not throw; the run stops at its next
  // check_interrupt. The first kept is raised; the GIL is held, so one keeps at a time.
  void keep(pybind11::error_already_set&& raised) {
    if (stopped_) return;
    error_ = std::move(raised);
    stopped_ = true;
  }
  void keep(std::exception_ptr failure) {
    if (stopped_) return;
    failure_ = std::move(failure);
    stopped_ = true;
  }
  bool stopped() const { return stopped_; }

  // Raises what was kept (with the GIL held, after the run has unwound); KeyboardInterrupt when
  // nothing was.
  [[noreturn]] void raise() {
    if (error_) throw std::move(*error_);
    if (failure_) std::rethrow_exception(failure_);
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw pybind11::error_already_set();
  }

 private:
  std::atomic<bool> stopped_{false};
  std::optional<pybind11::error_already_set> error_;
  std::exception_ptr failure_;
};

}  // namespace headscan
