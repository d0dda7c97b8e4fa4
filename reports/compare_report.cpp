#include "reports/compare_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "analyzer/errors.h"
#include "reports/parallel_tasks.h"
#include "reports/plots.h"

namespace headscan {
namespace {

// The scores of the small multiples when --scores is not given, in this order.
constexpr const char* kDefaultTrajectoryScores[] = {"induction", "previous_token", "first_token", "entropy", "importance"};

std::string file_part(const std::string& score) {
  std::string name;
  for (const char c : score) {
    const auto u = static_cast<unsigned char>(c);
    name += std::isalnum(u) ? static_cast<char>(std::tolower(u)) : '_';
  }
  return name;
}

// Whether some run has a number for the score (a column of its report data).
bool has_numbers(const Comparison& comparison, const std::string& name) {
  for (const CompareRun& run : comparison.runs) {
    for (int layer = 0; layer < run.layers; ++layer) {
      for (int head = 0; head < run.heads; ++head) {
        if (trajectory_value(run_score(run, layer, head, name))) return true;
      }
    }
  }
  return false;
}

Trajectory make_trajectory(const CompareView& view, const std::string& name) {
  const Comparison& comparison = *view.comparison;
  Trajectory trajectory;
  trajectory.name = name;
  trajectory.meaning = score_meaning(name);
  bool any_scale = false;
  for (const ReportData& data : view.runs) {
    const ScoreColumn* column = data.score(name);
    if (!column) continue;
    trajectory.low = any_scale ? std::min(trajectory.low, column->low) : column->low;
    trajectory.high = any_scale ? std::max(trajectory.high, column->high) : column->high;
    trajectory.diverging = trajectory.diverging || column->diverging;
    if (column->threshold) trajectory.threshold = column->threshold;
    any_scale = true;
  }
  if (trajectory.diverging) {
    const double largest = std::max(std::abs(trajectory.low), std::abs(trajectory.high));
    trajectory.low = -largest;
    trajectory.high = largest;
  }
  if (!(trajectory.high > trajectory.low)) trajectory.high = trajectory.low + 1;
  const std::size_t heads = static_cast<std::size_t>(comparison.layers) * static_cast<std::size_t>(comparison.heads);
  trajectory.values.assign(heads, {});
  for (std::size_t index = 0; index < heads; ++index) {
    const int layer = static_cast<int>(index / static_cast<std::size_t>(comparison.heads));
    const int head = static_cast<int>(index % static_cast<std::size_t>(comparison.heads));
    for (const CompareRun& run : comparison.runs) {
      trajectory.values[index].push_back(trajectory_value(run_score(run, layer, head, name)));
    }
  }
  return trajectory;
}

}  // namespace

std::vector<std::string> default_trajectory_scores(const Comparison& comparison) {
  std::vector<std::string> scores;
  for (const char* name : kDefaultTrajectoryScores) {
    if (has_numbers(comparison, name)) scores.emplace_back(name);
  }
  return scores;
}

std::vector<std::string> check_trajectory_scores(const Comparison& comparison, const std::vector<std::string>& names) {
  std::vector<std::string> available;
  for (const std::string& name : comparison.score_names) {
    if (has_numbers(comparison, name)) available.push_back(name);
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (std::find(available.begin(), available.end(), names[i]) == available.end()) {
      throw InputError(fmt::format("--scores: no run has a number for \"{}\"; the scores of these runs are: {}",
                                   names[i], fmt::join(available, ", ")));
    }
    if (std::find(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(i), names[i]) !=
        names.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw InputError(fmt::format("--scores: \"{}\" is given twice", names[i]));
    }
  }
  return names;
}

const ScoreDiff* CompareView::diff(const std::string& name) const {
  for (const ScoreDiff& found : diffs) {
    if (found.name == name) return &found;
  }
  return nullptr;
}

CompareView make_compare_view(const Comparison& comparison, const std::vector<std::string>& scores) {
  CompareView view;
  view.comparison = &comparison;
  for (const CompareRun& run : comparison.runs) {
    view.runs.push_back(read_report_data(run.document));
    view.findings.push_back(run_findings(run));
  }
  view.by_step = comparison.order != RunOrder::given;
  view.phase = phase_change(view.findings);
  double gap_low = 0, gap_high = kInContextGapFormed;
  for (const RunFindings& found : view.findings) {
    if (found.in_context_gap) {
      gap_low = std::min(gap_low, *found.in_context_gap);
      gap_high = std::max(gap_high, *found.in_context_gap);
    }
  }
  view.gap_axis = round_value_axis(gap_low, gap_high, 5);
  std::set<std::string> files;
  for (const std::string& name : scores) {
    Trajectory trajectory = make_trajectory(view, name);
    std::string part = file_part(name).substr(0, 64);
    if (files.count(part)) part += fmt::format("_{}", view.trajectories.size());
    files.insert(part);
    trajectory.plot_file = "trajectories_" + part + ".png";
    trajectory.diff_plot_file = "diff_" + part + ".png";
    view.trajectories.push_back(std::move(trajectory));
  }
  const std::size_t heads = static_cast<std::size_t>(comparison.layers) * static_cast<std::size_t>(comparison.heads);
  for (std::size_t index = 0; index < heads; ++index) {
    const bool changed = primary_changed(comparison, static_cast<int>(index / static_cast<std::size_t>(comparison.heads)),
                                         static_cast<int>(index % static_cast<std::size_t>(comparison.heads)));
    view.primary_changed.push_back(changed);
    view.changed_heads += changed;
  }
  if (comparison.runs.size() >= 2) {
    const CompareRun& first = comparison.runs.front();
    const CompareRun& last = comparison.runs.back();
    for (const std::string& name : comparison.score_names) {
      ScoreDiff diff;
      diff.name = name;
      diff.meaning = score_meaning(name);
      bool any = false;
      for (std::size_t index = 0; index < heads; ++index) {
        const int layer = static_cast<int>(index / static_cast<std::size_t>(comparison.heads));
        const int head = static_cast<int>(index % static_cast<std::size_t>(comparison.heads));
        const auto before = trajectory_value(run_score(first, layer, head, name));
        const auto after = trajectory_value(run_score(last, layer, head, name));
        std::optional<double> change;
        if (before && after && std::isfinite(*after - *before)) change = *after - *before;
        if (change) {
          diff.largest = std::max(diff.largest, std::abs(*change));
          any = true;
        }
        diff.change.push_back(change);
      }
      if (any) view.diffs.push_back(std::move(diff));
    }
  }
  return view;
}

Rgb trajectory_colour(const std::string& primary) {
  const Rgb colour = label_colour(primary);
  return colour.r + colour.g + colour.b > 2.4 ? Rgb{0.45, 0.45, 0.45} : colour;
}

double run_position(const CompareView& view, std::size_t run) {
  if (view.run_count() < 2) return 0.5;
  return static_cast<double>(run) / static_cast<double>(view.run_count() - 1);
}

std::vector<std::string> write_compare_report(const std::filesystem::path& directory, const CompareView& view,
                                              CompareReportOptions options) {
  const Comparison& comparison = *view.comparison;
  std::vector<std::string> warnings;
  options.head_plots = options.plots && comparison.layers <= kMaxPlottedGrid && comparison.heads <= kMaxPlottedGrid;
  if (options.plots && !options.head_plots) {
    warnings.push_back(fmt::format("{} layers × {} heads: more than {} across, so no PNG of the small multiples, diff "
                                   "maps and head maps (index.html draws them)",
                                   comparison.layers, comparison.heads, kMaxPlottedGrid));
  }
  std::vector<std::function<void()>> tasks;
  if (options.plots) {
    const auto plots = directory / "plots";
    std::filesystem::create_directories(plots);
    tasks.emplace_back([&view, plots] { plot_phase_change(view, plots / "phase_change.png"); });
  }
  if (options.head_plots) {
    const auto plots = directory / "plots";
    for (const Trajectory& trajectory : view.trajectories) {
      tasks.emplace_back([&view, &trajectory, plots] {
        plot_trajectories(view, trajectory, plots / trajectory.plot_file);
      });
      if (const ScoreDiff* diff = view.diff(trajectory.name)) {
        tasks.emplace_back([&view, diff, &trajectory, plots] {
          plot_score_diff(view, *diff, plots / trajectory.diff_plot_file);
        });
      }
    }
    for (std::size_t run = 0; run < view.run_count(); ++run) {
      tasks.emplace_back([&view, &comparison, run, plots] {
        plot_label_map(view.runs[run], plots / fmt::format("heads_{}.png", run),
                       fmt::format("Heads by primary label · {}", run_title(comparison.runs[run])));
      });
    }
  }
  if (options.html) tasks.emplace_back([&view, &directory, &options] { write_compare_page(directory, view, options); });
  run_tasks_in_parallel(tasks);
  return warnings;
}

}  // namespace headscan
