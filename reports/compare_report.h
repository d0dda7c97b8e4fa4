#pragma once
// The report of `headscan compare` beside compare.json and compare.csv (reports/compare_data.h):
//   index.html                      runs, phase-change figure, small multiples, head maps with a
//                                   slider over the runs, label changes, and the first-to-last diff
//   plots/phase_change.png          best induction score and in-context-learning gap against step
//   plots/trajectories_<score>.png  one small chart per head: the score across the runs
//   plots/heads_<k>.png             the head map of run k, coloured by primary label
//   plots/diff_<score>.png          the change of the score from the first run to the last

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "reports/compare_data.h"
#include "reports/palette.h"
#include "reports/plots.h"
#include "reports/report_data.h"

namespace headscan {

// Models with more layers or heads than this get no per-head PNGs (small multiples, diff maps,
// head maps): a PNG of their grid would be tens of thousands of pixels across. index.html draws
// them all the same.
constexpr int kMaxPlottedGrid = 256;

struct CompareReportOptions {
  bool html = true;
  bool plots = true;
  bool head_plots = true;  // the per-head PNGs: set by write_compare_report (plots and kMaxPlottedGrid)
  // Where the report will be once written: links to the runs' own reports are relative to it.
  std::filesystem::path target;
};

// induction, previous_token, first_token and entropy, and importance when present: those of them
// that some run has a number for.
std::vector<std::string> default_trajectory_scores(const Comparison& comparison);

// `names` checked against the runs: InputError (exit 2, naming the scores there are) for a name
// that no run has a number for, or one given twice.
std::vector<std::string> check_trajectory_scores(const Comparison& comparison, const std::vector<std::string>& names);

// One score across the runs, on one scale for all heads and runs.
struct Trajectory {
  std::string name;
  std::string meaning;
  double low = 0;
  double high = 1;
  bool diverging = false;            // signed: the scale is symmetric about 0
  std::optional<double> threshold;   // the label threshold of the last run that has one
  std::vector<std::vector<std::optional<double>>> values;  // [head index][run]
  // Its plots' names: "trajectories_" and "diff_" + the name reduced to [a-z0-9_], at most 64
  // characters, + ".png"; "_<k>" before ".png" where two chosen scores would share one.
  std::string plot_file;
  std::string diff_plot_file;

  // Where `value` sits on the scale, from 0 (low) to 1 (high), clamped; 0.5 when the scale is too
  // wide for a double (values near ±1e308 in a damaged run).
  double fraction(double value) const {
    const double t = (value - low) / (high - low);
    return std::isfinite(t) ? std::clamp(t, 0.0, 1.0) : 0.5;
  }
};

// The change of one score from the first run to the last.
struct ScoreDiff {
  std::string name;
  std::string meaning;
  std::vector<std::optional<double>> change;  // per head: last − first, when both have a value
  double largest = 0;                         // the largest |change|
};

// What the pages and plots draw, read once from the comparison.
struct CompareView {
  const Comparison* comparison = nullptr;
  std::vector<ReportData> runs;
  std::vector<RunFindings> findings;
  PhaseChange phase;
  ValueAxis gap_axis;        // the phase-change figure's right axis: min(0, lowest gap) to max(1 nat, highest)
  bool by_step = false;      // the runs are in order of step
  std::vector<Trajectory> trajectories;
  std::vector<ScoreDiff> diffs;        // every score with a value in the first and the last run
  std::vector<bool> primary_changed;   // per head
  std::size_t changed_heads = 0;

  std::size_t run_count() const { return runs.size(); }
  const ScoreDiff* diff(const std::string& name) const;
};

// `scores`: those of the small multiples and the diff maps. Throws std::runtime_error when a run
// has no usable heads.
CompareView make_compare_view(const Comparison& comparison, const std::vector<std::string>& scores);

// The line of a head's trajectory: the colour of its last primary label, dark grey for "none"
// (whose light grey would not show on the chart's background).
Rgb trajectory_colour(const std::string& primary);


// Where a run sits on the run axis of the phase-change figure and the trajectories, from 0 (the
// first) to 1 (the last): evenly spaced, in order, each labelled with its step. Checkpoints are
// usually saved densely around a phase change, which a linear scale of steps would squeeze into
// one point.
double run_position(const CompareView& view, std::size_t run);

// plots/*.png
void plot_phase_change(const CompareView& view, const std::filesystem::path& path);
void plot_trajectories(const CompareView& view, const Trajectory& trajectory, const std::filesystem::path& path);
void plot_score_diff(const CompareView& view, const ScoreDiff& diff, const std::filesystem::path& path);

// index.html; `plots` says whether plots/*.png were written.
void write_compare_page(const std::filesystem::path& directory, const CompareView& view,
                        const CompareReportOptions& options);

// Writes the pages and plots into `directory` (the staging directory of the report); returns
// warnings (per-head PNGs left out for a model too large for them).
std::vector<std::string> write_compare_report(const std::filesystem::path& directory, const CompareView& view,
                                              CompareReportOptions options);

}  // namespace headscan
