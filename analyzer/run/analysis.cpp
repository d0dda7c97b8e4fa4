// run_analysis(), scan() and save_report(): the options are checked, the model, tokenizer and corpus
// are opened and the model's shape is read off the first sequence (run_setup.h), the passes run
// (analyzer/run/passes/pass.h), heads.json's document is made (run_results.h), and heads.json and
// the reports are written (DESIGN.md, "Data flow").
#include <chrono>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "analyzer/errors.h"
#include "analyzer/model/device.h"
#include "analyzer/run/analysis.h"
#include "analyzer/run/kv_plan.h"
#include "analyzer/run/needle_json.h"
#include "analyzer/run/output/output_dir.h"
#include "analyzer/run/output/spooled_input.h"
#include "analyzer/run/passes/pass.h"
#include "analyzer/run/run_results.h"
#include "analyzer/run/run_setup.h"
#include "analyzer/run/run_state.h"
#include "analyzer/run/shard_run.h"
#include "heads/registry.h"
#include "reports/heads_csv.h"
#include "reports/heads_json.h"
#include "reports/model_layers_json.h"
#include "reports/report_writer.h"
#include "reports/text.h"

namespace headscan {

struct ScanResult::Impl {
  nlohmann::ordered_json document;  // heads.json
  RunSummary run;                   // its "run", before the report phase
  std::vector<ExampleSequence> corpus_examples;
  std::vector<ExampleSequence> probe_examples;
  std::string idf_text;             // idf.txt
  AnalysisSummary summary;          // output_dir empty
  std::vector<std::string> inputs;  // files a report directory must never replace (--force)
  // From the end of the last pass to the end of the scan (heads.json's document, the examples):
  // the start of the "reports" phase, which save_report ends.
  double seconds_after_passes = 0;
};

namespace {

// `text` with the stand-in files of AnalysisOptions::model_name and corpus_name named as the user
// gave them.
std::string named(const AnalysisOptions& options, std::string text) {
  if (!options.model_name.empty()) text = name_path(std::move(text), options.model_path, options.model_name);
  if (!options.corpus_name.empty()) text = name_path(std::move(text), options.corpus_path, options.corpus_name);
  return text;
}

// Every string of `value` named(): the model's and corpus's paths, the tokenizer's origin, the
// warnings.
void name_stand_ins(const AnalysisOptions& options, nlohmann::ordered_json& value) {
  if (options.model_name.empty() && options.corpus_name.empty()) return;
  if (value.is_string()) {
    value = named(options, value.get<std::string>());
  } else if (value.is_structured()) {
    for (auto& element : value) name_stand_ins(options, element);
  }
}

// The run's input files, which its report directory must never replace (--force).
std::vector<std::string> run_inputs(const AnalysisOptions& options) {
  return {options.model_path, options.corpus_path, options.tokenizer_path, options.idf_path, options.examples_path};
}

// The options a run checks before it opens anything; the device the run will use.
c10::Device check_run_options(const AnalysisOptions& options) {
  if (options.batch_size < 1) throw InputError(fmt::format("--batch-size {}: must be at least 1", options.batch_size));
  if (options.ablation_sequences < 1) {
    throw InputError(fmt::format("--ablation-sequences {}: must be at least 1", options.ablation_sequences));
  }
  // More threads than cores only slows LibTorch down, and a huge number never ends.
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores > 0 && options.threads > static_cast<int>(cores)) {
    throw InputError(fmt::format("--threads {}: this machine has {} cores; give at most {} (0: all of them)",
                                 options.threads, cores, cores));
  }
  check_shard_options(options);
  return resolve_device(options.device);
}

// The analysis of a corpus that is a file, up to heads.json's document, on `device`
// (check_run_options); `spooled` is standard input's copy when the corpus is it. `output` is the
// report directory, opened before the run so that a bad one fails at once (created here for a
// shard, whose state is written into it: the result then holds only the summary).
// `keep_examples`: the example sequences the pages draw are captured.
std::shared_ptr<ScanResult::Impl> analyze(const AnalysisOptions& options, const c10::Device& device,
                                          const SpooledInput* spooled, OutputDirectory* output, bool keep_examples) {
  std::optional<OutputDirectory> own_output;
  if (output == nullptr && options.shard) {
    own_output.emplace(options.output_dir, options.force, run_inputs(options));
    output = &*own_output;
  }
  const auto start = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  if (options.threads > 0) torch::set_num_threads(options.threads);

  RunSummary run;
  run.threads = torch::get_num_threads();
  run.batch_size = options.batch_size;
  run.seed = options.seed;
  run.device = device.str();
  run.device_name = device_name(device);
  reset_peak_device_memory(device);
  auto phase_start = start;
  auto end_phase = [&](const std::string& name) {
    const auto now = std::chrono::steady_clock::now();
    run.phases.emplace_back(name, std::chrono::duration<double>(now - phase_start).count());
    phase_start = now;
  };

  RunState state(options);
  load_model_and_text(state, device);
  check_needle_lengths(options.needle_lengths, state.text.shape.max_length);
  run.dtype = state.model->dtype();
  const c10::Device& model_device = state.model->device();
  if (model_device != device) {
    run.device = model_device.str();
    run.device_name = device_name(model_device);
    reset_peak_device_memory(model_device);
  }
  state.thresholds = resolve_thresholds(options.thresholds);
  const Thresholds& thresholds = state.thresholds;
  end_phase("load");
  open_corpus(state);
  warn_of_materialised_attention(state);
  if (options.ablation) state.objective = choose_ablation_objective(state);
  if (!options.examples_path.empty()) state.example_prompts = state.read_examples();
  state.classifiers.begin(state.shape, state.thresholds);
  state.record_examples = state.shape.causal && (keep_examples || options.shard);
  end_phase("shape");
  note_probes_left_out(state);
  for (const auto& pass : make_passes(options)) {
    pass->run(state);
    end_phase(pass->name());
  }

  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.peak_device_memory = peak_device_memory(model_device);
  run.peak_host_memory = peak_host_memory();
  run.attention = attention_summary(state);
  if (spooled != nullptr) {
    for (std::string& warning : state.warnings) warning = spooled->named(warning);
  }
  const std::vector<std::string> pass_warnings = state.warnings;
  nlohmann::ordered_json document = heads_document(state, thresholds, run);
  document["retrieval"] = needle_json(state.needle_summary);
  add_head_summary(document);
  const bool ablated = state.objective && !(options.shard && options.shard->index != 0);
  if (ablated) add_ablation_json(document, state);
  // Until here heads are numbered by attention map; from here on by the model's own layer index.
  number_layers(document, state.model->layer_numbering(), state.shape.layers);
  if (spooled != nullptr) document["corpus"]["path"] = "-";
  auto result = std::make_shared<ScanResult::Impl>();
  AnalysisSummary& summary = result->summary;
  summary.layers = state.shape.layers;
  summary.heads = state.shape.heads;
  summary.sequences = state.corpus_summary.sequences;
  summary.tokens = state.corpus_summary.tokens;
  summary.seconds = run.seconds;
  if (options.shard) {
    capture_examples_if_needed(state);
    output->write(
        [&](const std::filesystem::path&) { save_shard_state(state, document, pass_warnings, run, *output); });
    output->commit();
    // The counts' warnings are the merge's, over the whole corpus.
    summary.warnings = pass_warnings;
    summary.warnings.insert(summary.warnings.end(), output->notes().begin(), output->notes().end());
    summary.output_dir = options.output_dir;
    summary.shard_state = true;
    return result;
  }
  if (keep_examples) capture_examples_if_needed(state);
  result->corpus_examples = std::move(state.corpus_examples);
  result->probe_examples = std::move(state.probe_examples);
  result->idf_text = state.frequencies->text(*state.text.tokenizer);
  result->run = run;
  result->inputs = run_inputs(options);
  summary.warnings = state.warnings;
  for (const auto& head : document.at("heads")) ++summary.label_counts[head.at("primary").get<std::string>()];
  if (state.objective) summary.findings = ablation_findings(document);
  result->document = std::move(document);
  result->seconds_after_passes =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - phase_start).count();
  return result;
}

// The report directory of `result` into `output`'s staging directory: idf.txt, the HTML pages and
// PNG plots, then heads.json (with the time of the "reports" phase: from the end of the last pass),
// heads.csv and kv_plan/. `result` is left as it is.
void write_report(const ScanResult::Impl& result, const OutputDirectory& output, const ReportOptions& parts) {
  const auto start = std::chrono::steady_clock::now();
  write_text_file(output.staging() / "idf.txt", result.idf_text);
  if (parts.html || parts.plots) {
    headscan::write_reports(output.staging(), result.document, result.corpus_examples, result.probe_examples, parts);
  }
  RunSummary run = result.run;
  const double writing = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.phases.emplace_back("reports", result.seconds_after_passes + writing);
  nlohmann::ordered_json document = result.document;
  set_run(document, run);
  write_json_file(document, output.staging() / "heads.json");
  write_heads_csv(document, output.staging() / "heads.csv");
  write_kv_plan_files(document, output.staging() / "kv_plan");
}

AnalysisSummary saved_summary(const ScanResult::Impl& result, const OutputDirectory& output,
                              const std::string& output_dir) {
  AnalysisSummary summary = result.summary;
  summary.output_dir = output_dir;
  summary.warnings.insert(summary.warnings.end(), output.notes().begin(), output.notes().end());
  return summary;
}

// The command line's run: the report directory is opened before the run, so that a bad one fails
// at once, and written after it.
AnalysisSummary analyze_into_directory(const AnalysisOptions& options, const SpooledInput* spooled) {
  const c10::Device device = check_run_options(options);
  if (options.shard) return analyze(options, device, spooled, nullptr, false)->summary;
  OutputDirectory output(options.output_dir, options.force, run_inputs(options));
  const std::shared_ptr<ScanResult::Impl> result =
      analyze(options, device, spooled, &output, options.html || options.plots);
  const ReportOptions parts{options.html, options.plots};
  output.write([&](const std::filesystem::path&) { write_report(*result, output, parts); });
  output.commit();
  return saved_summary(*result, output, options.output_dir);
}

}  // namespace

ScanResult::ScanResult(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
const nlohmann::ordered_json& ScanResult::document() const { return impl_->document; }
std::string ScanResult::heads_csv() const { return headscan::heads_csv(impl_->document); }
const AnalysisSummary& ScanResult::summary() const { return impl_->summary; }

ScanResult scan(const AnalysisOptions& given) {
  AnalysisOptions options = given;
  options.shard.reset();
  try {
    std::shared_ptr<ScanResult::Impl> result = analyze(options, check_run_options(options), nullptr, nullptr, true);
    for (std::string& warning : result->summary.warnings) warning = named(options, warning);
    name_stand_ins(options, result->document);
    return ScanResult(std::move(result));
  } catch (const Interrupted&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const InputError& e) {
    throw InputError(named(options, e.what()));
  } catch (const std::exception& e) {
    throw std::runtime_error(named(options, e.what()));
  }
}

AnalysisSummary save_report(const ScanResult& result, const ReportTarget& target) {
  OutputDirectory output(target.output_dir, target.force, result.impl_->inputs);
  const ReportOptions parts{target.html, target.plots};
  output.write([&](const std::filesystem::path&) { write_report(*result.impl_, output, parts); });
  output.commit();
  return saved_summary(*result.impl_, output, target.output_dir);
}

AnalysisSummary run_analysis(const AnalysisOptions& given) {
  if (given.corpus_path != "-") return analyze_into_directory(given, nullptr);
  // "-": standard input, spooled once to a file that every pass can read.
  const SpooledInput spooled;
  AnalysisOptions options = given;
  options.corpus_path = spooled.path();
  try {
    AnalysisSummary summary = analyze_into_directory(options, &spooled);
    for (std::string& warning : summary.warnings) warning = spooled.named(warning);
    return summary;
  } catch (...) {
    spooled.rethrow_named();
  }
}

}  // namespace headscan
