#include "analyzer/run/compare_command.h"

#include <chrono>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/run/output_dir.h"
#include "reports/compare_data.h"
#include "reports/compare_report.h"
#include "reports/heads_csv.h"
#include "reports/heads_json.h"

namespace headscan {

CompareSummary run_compare(const CompareOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<CompareRun> runs;
  for (const std::string& run : options.runs) runs.push_back(read_compare_run(run));
  const Comparison comparison = make_comparison(std::move(runs), options.steps);
  const std::vector<std::string> scores = options.scores.empty() ? default_trajectory_scores(comparison)
                                                                 : check_trajectory_scores(comparison, options.scores);
  // The report data of every run is read before anything is written, so that a run the pages
  // cannot draw is refused with nothing written.
  CompareView view;
  try {
    view = make_compare_view(comparison, scores);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {  // read_report_data's errors, and nlohmann's on a value of the wrong type
    throw InputError(fmt::format("the runs cannot be drawn ({}); give reports written by headscan", e.what()));
  }

  // A run given as its heads.json stands for its report directory.
  std::vector<std::string> inputs;
  for (const std::string& run : options.runs) {
    inputs.push_back(std::filesystem::is_regular_file(run) ? std::filesystem::absolute(run).parent_path().string() : run);
  }
  OutputDirectory output(options.output_dir, options.force, inputs, OutputKind::comparison);
  const nlohmann::ordered_json document = compare_json(comparison);
  write_json_file(document, output.staging() / "compare.json");
  write_csv_file(compare_csv(comparison), output.staging() / "compare.csv");
  std::vector<std::string> report_warnings;
  if (options.html || options.plots) {
    CompareReportOptions report;
    report.html = options.html;
    report.plots = options.plots;
    report.target = output.target();
    report_warnings = write_compare_report(output.staging(), view, report);
  }
  output.commit();

  CompareSummary summary;
  summary.output_dir = options.output_dir;
  summary.runs = comparison.runs.size();
  summary.layers = comparison.layers;
  summary.heads = comparison.heads;
  for (const CompareRun& run : comparison.runs) summary.order.push_back(run_title(run));
  if (view.phase.induction_run) summary.induction_formed = run_title(comparison.runs[*view.phase.induction_run]);
  if (view.phase.gap_run) summary.gap_formed = run_title(comparison.runs[*view.phase.gap_run]);
  summary.changed_heads = view.changed_heads;
  summary.warnings = comparison.warnings;
  summary.warnings.insert(summary.warnings.end(), report_warnings.begin(), report_warnings.end());
  summary.warnings.insert(summary.warnings.end(), output.notes().begin(), output.notes().end());
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace headscan
