#include "analyzer/python/document_spool.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/python/temporary_file.h"

namespace py = pybind11;

namespace headscan {

std::string unencodable_character(py::handle text) {
  const Py_ssize_t length = PyUnicode_GetLength(text.ptr());
  for (Py_ssize_t index = 0; index < length; ++index) {
    const Py_UCS4 character = PyUnicode_ReadChar(text.ptr(), index);
    if (character >= 0xD800 && character <= 0xDFFF) return fmt::format("U+{:04X} at index {}", character, index);
  }
  return {};
}

DocumentSpool::DocumentSpool(const py::iterable& documents, PendingPythonError& pending)
    : iterator_(py::iter(documents)), pending_(pending) {
  std::string created;
  fd_ = create_temporary_file("corpus", ".jsonl", created);
  directory_ = std::filesystem::path(created).parent_path().string();
  path_ = fmt::format("/proc/self/fd/{}", fd_);
  if (access(path_.c_str(), R_OK) == 0) {
    unlink(created.c_str());
  } else {  // no /proc (a bare chroot): the file keeps its name until the run ends
    path_ = created;
    named_ = true;
  }
  growing_ = std::make_unique<GrowingFile>(path_, "corpus.jsonl", [this] { return extend(); });
}

DocumentSpool::~DocumentSpool() {
  growing_.reset();
  close(fd_);
  if (named_) unlink(path_.c_str());
}

bool DocumentSpool::extend() {
  if (ended_ || pending_.stopped()) return false;
  const py::gil_scoped_acquire acquire;
  try {
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    const py::object item = py::reinterpret_steal<py::object>(PyIter_Next(iterator_.ptr()));
    if (!item) {
      if (PyErr_Occurred() != nullptr) throw py::error_already_set();
      ended_ = true;
      return false;
    }
    if (!py::isinstance<py::str>(item)) {
      throw InputError(fmt::format("corpus item {} is a {}, expected a str: give a path, or an iterable of strings "
                                   "(one document each)",
                                   index_, py::str(py::type::handle_of(item).attr("__name__")).cast<std::string>()));
    }
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(item.ptr(), &size);
    if (utf8 == nullptr) {
      PyErr_Clear();
      throw InputError(fmt::format("corpus item {} holds {}, a lone surrogate, which UTF-8 cannot encode (what "
                                   "errors=\"surrogateescape\" leaves of undecodable bytes); decode the text with "
                                   "errors=\"replace\", or leave the character out",
                                   index_, unencodable_character(item)));
    }
    append(nlohmann::json{{"text", std::string(utf8, static_cast<std::size_t>(size))}}.dump() + '\n');
    ++index_;
    return true;
  } catch (py::error_already_set& raised) {
    pending_.keep(std::move(raised));
  } catch (...) {
    pending_.keep(std::current_exception());
  }
  ended_ = true;
  return false;
}

void DocumentSpool::append(const std::string& line) {
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t step = write(fd_, line.data() + done, line.size() - done);
    if (step < 0 && errno == EINTR) continue;
    if (step <= 0) {
      throw std::runtime_error(fmt::format("cannot write corpus item {} to a temporary file in {} ({}); free some "
                                           "space there, or set TMPDIR to a folder with room",
                                           index_, directory_, std::strerror(step < 0 ? errno : ENOSPC)));
    }
    done += static_cast<std::size_t>(step);
  }
}

}  // namespace headscan
