#include "analyzer/run/commands/compare_command.h"

#include <chrono>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/run/output/output_dir.h"
#include "reports/compare_data.h"
#include "reports/compare_report.h"
#include "reports/heads_csv.h"
#include "reports/heads_json.h"

namespace headscan {

struct CompareResult::Impl {
  Comparison comparison;
  CompareView view;  // points into `comparison`: the Impl never moves
  nlohmann::ordered_json document;
  CompareSummary summary;
  std::vector<std::string> inputs;  // report directories a comparison must never replace
  double seconds_before_save = 0;
};

CompareResult::CompareResult(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
const nlohmann::ordered_json& CompareResult::document() const { return impl_->document; }
std::string CompareResult::csv() const { return compare_csv(impl_->comparison); }
const CompareSummary& CompareResult::summary() const { return impl_->summary; }

CompareResult compare(const CompareOptions& options, const std::vector<CompareInput>& inputs) {
  const auto start = std::chrono::steady_clock::now();
  auto result = std::make_shared<CompareResult::Impl>();
  std::vector<CompareRun> runs;
  for (const CompareInput& input : inputs) {
    if (!input.heads_json) {
      runs.push_back(read_compare_run(input.given));
      // A run given as its heads.json stands for its report directory.
      result->inputs.push_back(std::filesystem::is_regular_file(input.given)
                                   ? std::filesystem::absolute(input.given).parent_path().string()
                                   : input.given);
      continue;
    }
    CompareRun run = parse_compare_run(*input.heads_json, input.given);
    run.given = input.given;
    run.name = input.given;
    run.path.clear();  // held in memory: no file, no report to link to
    runs.push_back(std::move(run));
  }
  result->comparison = make_comparison(std::move(runs), options.steps);
  const Comparison& comparison = result->comparison;
  const std::vector<std::string> scores = options.scores.empty() ? default_trajectory_scores(comparison)
                                                                 : check_trajectory_scores(comparison, options.scores);
  // The report data of every run is read before anything is written, so that a run the pages
  // cannot draw is refused with nothing written.
  try {
    result->view = make_compare_view(comparison, scores);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {  // read_report_data's errors, and nlohmann's on a value of the wrong type
    throw InputError(fmt::format("the runs cannot be drawn ({}); give reports written by headscan", e.what()));
  }
  result->document = compare_json(comparison);

  CompareSummary& summary = result->summary;
  const CompareView& view = result->view;
  summary.runs = comparison.runs.size();
  summary.layers = comparison.layers;
  summary.heads = comparison.heads;
  for (const CompareRun& run : comparison.runs) summary.order.push_back(run_title(run));
  if (view.phase.induction_run) summary.induction_formed = run_title(comparison.runs[*view.phase.induction_run]);
  if (view.phase.gap_run) summary.gap_formed = run_title(comparison.runs[*view.phase.gap_run]);
  summary.changed_heads = view.changed_heads;
  summary.warnings = comparison.warnings;
  result->seconds_before_save = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  summary.seconds = result->seconds_before_save;
  return CompareResult(std::move(result));
}

CompareSummary save_compare(const CompareResult& given, const std::string& output_dir, bool force, bool html,
                            bool plots) {
  const auto start = std::chrono::steady_clock::now();
  const CompareResult::Impl& result = *given.impl_;
  OutputDirectory output(output_dir, force, result.inputs, OutputKind::comparison);
  std::vector<std::string> report_warnings;
  output.write([&](const std::filesystem::path& staging) {
    write_json_file(result.document, staging / "compare.json");
    write_csv_file(compare_csv(result.comparison), staging / "compare.csv");
    if (html || plots) {
      CompareReportOptions report;
      report.html = html;
      report.plots = plots;
      report.target = output.target();
      report_warnings = write_compare_report(staging, result.view, report);
    }
  });
  output.commit();

  CompareSummary summary = result.summary;
  summary.output_dir = output_dir;
  summary.warnings.insert(summary.warnings.end(), report_warnings.begin(), report_warnings.end());
  summary.warnings.insert(summary.warnings.end(), output.notes().begin(), output.notes().end());
  summary.seconds = result.seconds_before_save +
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

CompareSummary run_compare(const CompareOptions& options) {
  std::vector<CompareInput> inputs;
  for (const std::string& run : options.runs) inputs.push_back(CompareInput{run, std::nullopt});
  return save_compare(compare(options, inputs), options.output_dir, options.force, options.html, options.plots);
}

}  // namespace headscan
