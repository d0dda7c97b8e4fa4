// headscan._core: the Python module's bridge to the library, a front end beside the command line
// (analyzer/cli). Built with the pybind11 that torch ships, so that torch's own type casters take
// a live torch.jit.ScriptModule. scan() takes the command line's flags (analysis_command.h), so
// both front ends share one set of options, defaults, checks and messages; the Python package
// (headscan/_api.py) only turns keyword arguments into those flags.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <pybind11/gil_safe_call_once.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/jit/python/module_python.h>
#include <torch/script.h>

#include "analyzer/cli/analysis_command.h"
#include "analyzer/cli/option_values.h"
#include "analyzer/errors.h"
#include "analyzer/model/model.h"
#include "analyzer/python/document_spool.h"
#include "analyzer/python/pending_error.h"
#include "analyzer/python/temporary_file.h"
#include "analyzer/run/analysis.h"
#include "analyzer/run/commands/compare_command.h"
#include "analyzer/run/shards/merge_command.h"
#include "reports/plots.h"
#include "reports/report_data.h"
#include "reports/text.h"

namespace py = pybind11;

namespace headscan {
namespace {

std::string type_name(py::handle object) { return py::str(py::type::handle_of(object).attr("__name__")); }

// A live ScriptModule saved as the archive the command line would load (torch.jit.save), with
// `metadata` as its extra/headscan.json and `tokenizer_json` as its extra/tokenizer.json: both
// front ends then load one way, and scan() on the module equals the command line on the module
// saved.
std::unique_ptr<StandIn> save_module(const torch::jit::Module& module, const std::string& metadata,
                                     const std::string& tokenizer_json) {
  auto file = std::make_unique<StandIn>("module", ".pt");
  torch::jit::ExtraFilesMap extra;
  if (!metadata.empty()) extra["headscan.json"] = metadata;
  if (!tokenizer_json.empty()) extra["tokenizer.json"] = tokenizer_json;
  try {
    module.save(file->path(), extra);
  } catch (const std::exception& e) {
    throw InputError(fmt::format("cannot save the module for the analysis ({}); save it with torch.jit.save and "
                                 "give the file's path",
                                 e.what()));
  }
  return file;
}

py::dict summary_dict(const AnalysisSummary& summary) {
  py::dict result;
  result["output_dir"] = summary.output_dir;
  result["layers"] = summary.layers;
  result["heads"] = summary.heads;
  result["sequences"] = summary.sequences;
  result["tokens"] = summary.tokens;
  result["seconds"] = summary.seconds;
  result["label_counts"] = summary.label_counts;
  result["findings"] = summary.findings;
  result["warnings"] = summary.warnings;
  return result;
}

py::dict compare_summary_dict(const CompareSummary& summary) {
  py::dict result;
  result["output_dir"] = summary.output_dir;
  result["runs"] = summary.runs;
  result["layers"] = summary.layers;
  result["heads"] = summary.heads;
  result["order"] = summary.order;
  result["induction_formed"] = summary.induction_formed;
  result["gap_formed"] = summary.gap_formed;
  result["changed_heads"] = summary.changed_heads;
  result["seconds"] = summary.seconds;
  result["warnings"] = summary.warnings;
  return result;
}

// A run of the analysis from Python: `model` a path or a ScriptModule, `corpus` a path or an
// iterable of strings, `flags` the command line's ("--max-length", "128", …), `progress` None or
// called as progress(done, total, tokens, unit, final); `metadata` and `tokenizer_json` go into a
// live module's archive; `model_name`, when not empty, names the archive at the path `model` in the
// run's output (a module exported in memory). The flags are parsed by the command line's parser
// into the options that `run(options)` is called with, without the GIL; Ctrl-C and what the
// progress callback or the documents raise stop it.
template <typename Run>
auto run_from_python(const py::object& model, const py::object& corpus, const std::vector<std::string>& flags,
                     const py::object& progress, const std::string& metadata, const std::string& tokenizer_json,
                     const std::string& model_name, Run&& run)
    -> decltype(run(std::declval<const AnalysisOptions&>())) {
  // What was given, checked before anything is saved or read: a bad option must not use up the
  // user's generator.
  const std::optional<torch::jit::Module> module = torch::jit::as_module(model);
  if (!module && !py::isinstance<py::str>(model)) {
    throw InputError(fmt::format("model is a {}: give the path of an exported program (.pt2, headscan export) or "
                                 "of a TorchScript archive (.pt), or a torch.jit.ScriptModule (what torch.jit.trace "
                                 "or torch.jit.script returns); headscan.scan() also takes a torch.nn.Module, which "
                                 "it exports in memory",
                                 type_name(model)));
  }
  if (!module && (!metadata.empty() || !tokenizer_json.empty())) {
    throw InputError("metadata= and a tokenizer object are for a live module; an archive brings its own "
                     "extra/headscan.json and extra/tokenizer.json (or give tokenizer= a file's path)");
  }
  const bool corpus_is_path = py::isinstance<py::str>(corpus);
  if (!corpus_is_path && (!py::isinstance<py::iterable>(corpus) || py::isinstance<py::bytes>(corpus))) {
    throw InputError(fmt::format("corpus is a {}: give a path or an iterable of strings (one document each)",
                                 type_name(corpus)));
  }
  if (!corpus_is_path && std::find(flags.begin(), flags.end(), "--text-field") != flags.end()) {
    throw InputError("text_field= names a field of a .jsonl corpus file; a corpus of strings has no fields");
  }
  // The command line's parser, with stand-ins' names for a live module and a corpus of strings
  // (a .jsonl file, as the strings will be written).
  std::vector<std::string> args{"headscan", module ? "module.pt" : model.cast<std::string>(),
                                corpus_is_path ? corpus.cast<std::string>() : "corpus.jsonl"};
  args.insert(args.end(), flags.begin(), flags.end());
  AnalysisCommand command;
  command.parse(args);
  AnalysisOptions options = command.finish();

  PendingPythonError pending;
  std::unique_ptr<StandIn> model_file;
  std::unique_ptr<DocumentSpool> corpus_file;
  if (module) {
    model_file = save_module(*module, metadata, tokenizer_json);
    options.model_path = model_file->path();
    options.model_name = fmt::format("<{}>", module->type()->name() ? module->type()->name()->name() : "ScriptModule");
  } else if (!model_name.empty()) {
    options.model_name = model_name;
  }
  if (!corpus_is_path) {
    corpus_file = std::make_unique<DocumentSpool>(corpus, pending);
    options.corpus_path = corpus_file->path();
    options.corpus_name = fmt::format("<{}>", type_name(corpus));
  }
  const py::object* progress_callback = progress.is_none() ? nullptr : &progress;
  options.progress = progress_callback != nullptr;
  if (progress_callback != nullptr) {
    options.on_progress = [progress_callback, &pending](const ProgressUpdate& update) {
      const py::gil_scoped_acquire acquire;
      try {
        (*progress_callback)(update.done, update.total, update.tokens, update.unit, update.final);
      } catch (py::error_already_set& e) {
        pending.stop(std::move(e));
      }
    };
  }
  // Ctrl-C: Python's handler only notes the signal while the run holds no GIL; it runs here, at
  // most every 50 ms, between batches and documents. What the iterable of documents raised stops
  // the run here too.
  auto last_check = std::chrono::steady_clock::now();
  options.check_interrupt = [&pending, &last_check] {
    if (pending.stopped()) throw Interrupted();
    const auto now = std::chrono::steady_clock::now();
    if (now - last_check < std::chrono::milliseconds(50)) return;
    last_check = now;
    const py::gil_scoped_acquire acquire;
    if (PyErr_CheckSignals() != 0) pending.stop(py::error_already_set());
  };
  try {
    const py::gil_scoped_release release;
    return run(options);
  } catch (const Interrupted&) {
    pending.raise();
  } catch (...) {
    // The end of the documents that pulling one failed at is no corpus's end: what failed is the
    // error (the reader may have met the end of the file first, e.g. "the corpus is empty").
    if (pending.stopped()) pending.raise();
    throw;
  }
}

ScanResult scan_from_python(const py::object& model, const py::object& corpus, const std::vector<std::string>& flags,
                            const py::object& progress, const std::string& metadata,
                            const std::string& tokenizer_json, const std::string& model_name) {
  return run_from_python(model, corpus, flags, progress, metadata, tokenizer_json, model_name,
                         [](const AnalysisOptions& options) { return scan(options); });
}

// run_shard(model, corpus, flags, progress): `headscan MODEL CORPUS --shard I/N -o DIR …`, the
// flags carrying --shard and -o: the shard's state written as the command line writes it. Paths
// only: merge checks that every shard read the same archive and corpus file (their SHA-256 and
// fingerprint), which a module saved or documents spooled by each shard's own process would not be.
AnalysisSummary run_shard_from_python(const py::object& model, const py::object& corpus,
                                      const std::vector<std::string>& flags, const py::object& progress) {
  if (!py::isinstance<py::str>(model)) {
    throw InputError(fmt::format("model is a {}: a shard analyses an archive by its path, which every shard must "
                                 "share (merge checks its SHA-256); save the module (headscan.export(module, "
                                 "\"model.pt2\") or torch.jit.save) and give the file's path",
                                 type_name(model)));
  }
  if (!py::isinstance<py::str>(corpus)) {
    throw InputError(fmt::format("corpus is a {}: a shard reads its slice of a corpus file, which every shard must "
                                 "share; write the documents to a file (one per line, or JSON Lines) and give its "
                                 "path",
                                 type_name(corpus)));
  }
  return run_from_python(model, corpus, flags, progress, "", "", "",
                         [](const AnalysisOptions& options) { return run_analysis(options); });
}

py::dict merge_summary_dict(const MergeSummary& summary) {
  py::dict result;
  result["output_dir"] = summary.output_dir;
  result["shards"] = summary.shards;
  result["layers"] = summary.layers;
  result["heads"] = summary.heads;
  result["sequences"] = summary.sequences;
  result["tokens"] = summary.tokens;
  result["shard_seconds"] = summary.shard_seconds;
  result["seconds"] = summary.seconds;
  result["label_counts"] = summary.label_counts;
  result["warnings"] = summary.warnings;
  return result;
}

// heads.png of the report (the layer × head map by primary label), as PNG bytes.
py::bytes head_map_png(const ScanResult& result) {
  const StandIn file("heads", ".png");
  {
    const py::gil_scoped_release release;
    plot_label_map(read_report_data(result.document()), file.path());
  }
  std::ifstream in(file.path(), std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return py::bytes(bytes.str());
}

}  // namespace
}  // namespace headscan

PYBIND11_MODULE(_core, m) {
  using namespace headscan;
  m.doc() = "headscan's C++ core (the Python package headscan wraps it)";
  m.attr("__version__") = HEADSCAN_VERSION;
  m.attr("libtorch") = libtorch_description();

  // Exit code 2 of the command line: bad input or usage; exit code 1: a failure while running.
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> input_error;
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> run_error;
  input_error.call_once_and_store_result(
      [&m] { return py::exception<InputError>(m, "InputError", PyExc_ValueError); });
  run_error.call_once_and_store_result(
      [&m] { return py::exception<std::runtime_error>(m, "RunError", PyExc_RuntimeError); });
  // Local: only this module's functions, not those of torch's bindings that share pybind11's
  // internals with it.
  py::register_local_exception_translator([](std::exception_ptr raised) {
    try {
      if (raised) std::rethrow_exception(raised);
    } catch (const py::error_already_set&) {
      throw;
    } catch (const py::builtin_exception&) {
      throw;
    } catch (const InputError& e) {  // messages as the command line prints them: control characters escaped
      PyErr_SetString(input_error.get_stored().ptr(), terminal_text(e.what()).c_str());
    } catch (const Interrupted&) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception& e) {
      PyErr_SetString(run_error.get_stored().ptr(), terminal_text(e.what()).c_str());
    }
  });

  m.def("terminal_text", [](const std::string& message) { return terminal_text(message); },
        "A message with its control characters escaped, as the command line prints it.");

  m.def("analysis_flags", [] {
    AnalysisCommand command;
    std::vector<py::tuple> flags;
    for (const AnalysisCommand::Flag& flag : command.flags()) {
      flags.push_back(py::make_tuple(flag.name, flag.takes_value, flag.repeatable));
    }
    return flags;
  }, "The command line's analysis options: (long name, takes a value, repeatable).");

  py::class_<ScanResult>(m, "ScanResult")
      .def("heads_json", [](const ScanResult& result) { return result.document().dump(2); })
      .def("heads_csv", &ScanResult::heads_csv)
      .def("summary", [](const ScanResult& result) { return summary_dict(result.summary()); })
      .def("head_map_png", &head_map_png)
      .def("save", [](const ScanResult& result, const std::string& output_dir, bool force, bool html, bool plots) {
        AnalysisSummary summary;
        {
          const py::gil_scoped_release release;
          summary = save_report(result, ReportTarget{output_dir, force, html, plots});
        }
        return summary_dict(summary);
      }, py::arg("output_dir"), py::arg("force"), py::arg("html"), py::arg("plots"));

  m.def("scan", &scan_from_python, py::arg("model"), py::arg("corpus"), py::arg("flags"), py::arg("progress"),
        py::arg("metadata"), py::arg("tokenizer_json"), py::arg("model_name") = "");

  m.def("run_shard", [](const py::object& model, const py::object& corpus, const std::vector<std::string>& flags,
                        const py::object& progress) {
    return summary_dict(run_shard_from_python(model, corpus, flags, progress));
  }, py::arg("model"), py::arg("corpus"), py::arg("flags"), py::arg("progress"));

  // merge(shards, output_dir, thresholds, force, html, plots): `headscan merge SHARD... -o OUT`,
  // `thresholds` its --threshold texts ("NAME=VALUE"), read by the command line's parser.
  m.def("merge", [](const std::vector<std::string>& shards, const std::string& output_dir,
                    const std::vector<std::string>& thresholds, bool force, bool html, bool plots) {
    MergeOptions options;
    options.shard_directories = shards;
    options.output_dir = output_dir;
    for (const std::string& directory : shards) check_path_option("headscan merge", directory);
    check_path_option("-o", output_dir);
    options.thresholds = parse_threshold_options(thresholds);
    options.force = force;
    options.html = html;
    options.plots = plots;
    MergeSummary summary;
    {
      const py::gil_scoped_release release;
      summary = run_merge(options);
    }
    return merge_summary_dict(summary);
  }, py::arg("shards"), py::arg("output_dir"), py::arg("thresholds"), py::arg("force"), py::arg("html"),
     py::arg("plots"));

  py::class_<CompareResult>(m, "CompareResult")
      .def("compare_json", [](const CompareResult& result) { return result.document().dump(2); })
      .def("compare_csv", &CompareResult::csv)
      .def("summary", [](const CompareResult& result) { return compare_summary_dict(result.summary()); })
      .def("save", [](const CompareResult& result, const std::string& output_dir, bool force, bool html, bool plots) {
        CompareSummary summary;
        {
          const py::gil_scoped_release release;
          summary = save_compare(result, output_dir, force, html, plots);
        }
        return compare_summary_dict(summary);
      }, py::arg("output_dir"), py::arg("force"), py::arg("html"), py::arg("plots"));

  // compare(runs, scores, steps): `runs` holds (name or path, heads.json text or None); `steps` is
  // None or the text of `headscan compare --steps`, read by the command line's parser.
  m.def("compare", [](const std::vector<std::pair<std::string, std::optional<std::string>>>& runs,
                      const std::vector<std::string>& scores, const std::optional<std::string>& steps) {
    CompareOptions options;
    options.scores = scores;
    if (steps) options.steps = parse_steps_option(*steps);
    std::vector<CompareInput> inputs;
    for (const auto& [given, text] : runs) inputs.push_back(CompareInput{given, text});
    const py::gil_scoped_release release;
    return compare(options, inputs);
  }, py::arg("runs"), py::arg("scores"), py::arg("steps"));
}
