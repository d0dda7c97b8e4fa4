// The compare index's charts as inline SVG (reports/html_compare_sections.h): the phase-change figure
// and the small multiples of each score's trajectories.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/compare_report.h"
#include "reports/html_compare_sections.h"
#include "reports/html_page.h"
#include "reports/palette.h"
#include "reports/text.h"

namespace headscan {

using Json = nlohmann::ordered_json;

// "none → previous-token → induction": the primary labels a head went through.
std::string primary_path(const Comparison& comparison, int layer, int head) {
  std::vector<std::string> path;
  for (const CompareRun& run : comparison.runs) {
    const std::string primary = run.head(layer, head)["primary"].get<std::string>();
    if (path.empty() || path.back() != primary) path.push_back(primary);
  }
  return fmt::format("{}", fmt::join(path, " → "));
}

std::string head_id(int layer, int head) { return fmt::format("L{}H{}", layer, head); }

namespace {

// The phase-change figure as SVG: best induction score (left axis) and in-context-learning gap
// (right axis) against step; each point has a title with its numbers.
std::string phase_svg(const CompareView& view, std::size_t& points) {
  const CompareColours& colours = compare_colours();
  const double left = 70, top = 24, width = 600, height = 260;
  auto x_of = [&](std::size_t run) { return left + run_position(view, run) * width; };
  const ValueAxis& gap_axis = view.gap_axis;
  auto y_induction = [&](double score) { return top + height - std::clamp(score, 0.0, 1.0) * height; };
  auto y_gap = [&](double gap) { return top + height - (gap - gap_axis.low) / (gap_axis.high - gap_axis.low) * height; };

  std::string svg = "<svg class=\"phase\" viewBox=\"0 0 760 340\" role=\"img\" aria-label=\"best induction score and "
                    "in-context-learning gap against step\">";
  for (int i = 0; i <= 5; ++i) {
    const double y = y_induction(i / 5.0);
    svg += fmt::format("<line x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#eaeaea\"/>"
                       "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\" fill=\"{5}\">{6}</text>",
                       left, left + width, y, left - 6, y + 4, to_hex(colours.induction), format_number(i / 5.0, 1));
  }
  for (double value = gap_axis.low; value <= gap_axis.high + gap_axis.step / 2; value += gap_axis.step) {
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\">{}</text>", left + width + 6, y_gap(value) + 4,
                       to_hex(colours.in_context_gap), format_number(value, gap_axis.digits));
  }
  svg += fmt::format("<path d=\"M{0:.1f} {1:.1f}V{2:.1f}H{3:.1f}V{1:.1f}\" fill=\"none\" stroke=\"#444\"/>", left, top,
                     top + height, left + width);
  const std::size_t every = std::max<std::size_t>(1, view.run_count() * 64 / static_cast<std::size_t>(width) + 1);
  for (std::size_t run = 0; run < view.run_count(); ++run) {
    svg += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\" stroke=\"#444\"/>", x_of(run),
                       top + height, top + height + 4);
    if (run % every != 0 && !(run + 1 == view.run_count() && run % every >= (every + 1) / 2)) continue;
    const CompareRun& found = view.comparison->runs[run];
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#444\">{}</text>", x_of(run),
                       top + height + 18, escape_html(view.by_step && found.step ? std::to_string(*found.step) : found.name));
  }
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#333\">{}</text>", left + width / 2,
                     top + height + 40, view.by_step ? "training step (runs evenly spaced)" : "run");
  svg += fmt::format("<text transform=\"translate(20 {:.1f}) rotate(-90)\" text-anchor=\"middle\" fill=\"{}\">best "
                     "induction score</text>",
                     top + height / 2, to_hex(colours.induction));
  svg += fmt::format("<text transform=\"translate(742 {:.1f}) rotate(90)\" text-anchor=\"middle\" fill=\"{}\">"
                     "in-context-learning gap (nats)</text>",
                     top + height / 2, to_hex(colours.in_context_gap));
  svg += fmt::format("<line x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#8cb8d9\" "
                     "stroke-dasharray=\"5 4\"/>",
                     left, left + width, y_induction(kInductionFormed));
  if (kInContextGapFormed >= gap_axis.low && kInContextGapFormed <= gap_axis.high) {
    svg += fmt::format("<line x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#edb38c\" "
                       "stroke-dasharray=\"5 4\"/>",
                       left, left + width, y_gap(kInContextGapFormed));
  }
  std::string induction_line, gap_line, markers;
  for (std::size_t run = 0; run < view.run_count(); ++run) {
    const RunFindings& found = view.findings[run];
    const std::string title = escape_html(run_title(view.comparison->runs[run]));
    if (found.in_context_gap) {
      const double x = x_of(run), y = y_gap(*found.in_context_gap);
      gap_line += fmt::format("{}{:.1f},{:.1f}", gap_line.empty() ? "" : " ", x, y);
      markers += fmt::format("<rect class=\"point gap\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"8\" height=\"8\" fill=\"{}\">"
                             "<title>{}: in-context-learning gap {} nats</title></rect>",
                             x - 4, y - 4, to_hex(colours.in_context_gap), title, format_number(found.in_context_gap, 3));
      ++points;
    }
    if (found.best_induction) {
      const double x = x_of(run), y = y_induction(*found.best_induction);
      induction_line += fmt::format("{}{:.1f},{:.1f}", induction_line.empty() ? "" : " ", x, y);
      markers += fmt::format("<circle class=\"point induction\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4.5\" fill=\"{}\">"
                             "<title>{}: best induction score {} ({})</title></circle>",
                             x, y, to_hex(colours.induction), title, format_number(found.best_induction, 3),
                             head_id(view.comparison->model_layer(found.best_layer), found.best_head));
      ++points;
    }
  }
  svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.5\"/>", gap_line,
                     to_hex(colours.in_context_gap));
  svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.5\"/>", induction_line,
                     to_hex(colours.induction));
  return svg + markers + "</svg>";
}

// One score's small multiples: a chart per head, its trajectory across the runs.
std::string multiples_svg(const CompareView& view, const Trajectory& trajectory) {
  const Comparison& comparison = *view.comparison;
  const double cell_width = std::floor(std::clamp(1000.0 / comparison.heads - 4, 22.0, 160.0));
  const double cell_height = std::floor(std::max(16.0, cell_width * 0.62));
  const double gap = 4, left = 34, top = 18;
  const double width = left + comparison.heads * (cell_width + gap);
  const double height = top + comparison.layers * (cell_height + gap);
  std::string svg = fmt::format("<svg class=\"multiples\" data-score=\"{0}\" viewBox=\"0 0 {1:.0f} {2:.0f}\" width=\"{1:.0f}\" "
                                "role=\"img\" aria-label=\"{0} of each head across the runs\">",
                                escape_html(trajectory.name), width, height);
  const int every = static_cast<int>(std::ceil(16.0 / (cell_width + gap)));
  for (int head = 0; head < comparison.heads; head += every) {
    svg += fmt::format("<text class=\"axis\" x=\"{:.1f}\" y=\"12\" text-anchor=\"middle\">{}</text>",
                       left + head * (cell_width + gap) + cell_width / 2, head);
  }
  const int layer_every = static_cast<int>(std::ceil(12.0 / (cell_height + gap)));
  for (int layer = 0; layer < comparison.layers; layer += layer_every) {
    svg += fmt::format("<text class=\"axis\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">L{}</text>", left - 4,
                       top + layer * (cell_height + gap) + cell_height / 2 + 4, comparison.model_layer(layer));
  }
  auto y_of = [&](double value) {
    return cell_height - 2 - trajectory.fraction(value) * (cell_height - 4);
  };
  for (int layer = 0; layer < comparison.layers; ++layer) {
    for (int head = 0; head < comparison.heads; ++head) {
      const std::size_t index = static_cast<std::size_t>(layer) * static_cast<std::size_t>(comparison.heads) +
                                static_cast<std::size_t>(head);
      const bool changed = view.primary_changed[index];
      svg += fmt::format("<g class=\"trajectory{}\" data-head-id=\"{} · {}\" transform=\"translate({:.1f} {:.1f})\">"
                         "<rect width=\"{:.0f}\" height=\"{:.0f}\"/>",
                         changed ? " changed" : "", head_id(comparison.model_layer(layer), head), escape_html(trajectory.name),
                         left + head * (cell_width + gap), top + layer * (cell_height + gap), cell_width, cell_height);
      if (trajectory.threshold && *trajectory.threshold > trajectory.low && *trajectory.threshold < trajectory.high) {
        svg += fmt::format("<line class=\"threshold\" x1=\"1\" x2=\"{:.0f}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>", cell_width - 1,
                           y_of(*trajectory.threshold), y_of(*trajectory.threshold));
      }
      std::string points;
      for (std::size_t run = 0; run < view.run_count(); ++run) {
        const auto& value = trajectory.values[index][run];
        if (!value) continue;
        points += fmt::format("{}{:.1f},{:.1f}", points.empty() ? "" : " ",
                              3 + run_position(view, run) * (cell_width - 6), y_of(*value));
      }
      svg += fmt::format("<polyline points=\"{}\" stroke=\"{}\"/></g>", points,
                         to_hex(trajectory_colour(view.runs.back().head_list[index].primary)));
    }
  }
  return svg + "</svg>";
}

}  // namespace

std::string phase_section(const CompareView& view, const CompareReportOptions& options, std::size_t& points) {
  const Comparison& comparison = *view.comparison;
  std::string html = "<section id=\"phase\"><h2>Phase change</h2><p class=\"note\">Olsson et al. (2022) found that "
                     "induction heads form suddenly during training, at the moment the model starts to learn in context. "
                     "Blue: the best induction score over all heads (left axis); vermillion: the in-context-learning "
                     "gap, the loss on the first repeat of the induction probes minus the mean loss on the later "
                     "repeats (right axis, nats). Hover a point for its numbers.</p>";
  auto at = [&](const std::optional<std::size_t>& run) {
    return run ? escape_html(run_title(comparison.runs[*run])) : std::string("in none of the runs");
  };
  html += fmt::format("<p>The best induction score first exceeds {} {}; the in-context-learning gap first reaches {} nat "
                      "{}.</p>",
                      format_number(kInductionFormed, 1), view.phase.induction_run ? "at " + at(view.phase.induction_run) : at(std::nullopt),
                      format_number(kInContextGapFormed, 0),
                      view.phase.gap_run ? "at " + at(view.phase.gap_run) : at(std::nullopt));
  html += "<figure class=\"pruning\">" + phase_svg(view, points) + "</figure>";
  if (options.plots) html += "<p class=\"note\">As PNG: <a href=\"plots/phase_change.png\">plots/phase_change.png</a></p>";
  return html + "</section>\n";
}

std::string trajectories_section(const CompareView& view, const CompareReportOptions& options, Json& head_info) {
  const Comparison& comparison = *view.comparison;
  std::string html = fmt::format(
      "<section id=\"trajectories\"><h2>Scores across the runs</h2><p class=\"note\">One small chart per head (layers "
      "are rows, heads columns): the score in each run, left to right{}. Orange: the head's primary label changed "
      "({} of {} heads); the line takes the colour of its last primary label; grey line across: the label's threshold. "
      "Hover a chart for its numbers.</p>",
      view.by_step ? " by step" : "", view.changed_heads, comparison.layers * comparison.heads);
  if (view.trajectories.empty()) html += "<p class=\"note\">None of the chosen scores has a number in these runs.</p>";
  for (const Trajectory& trajectory : view.trajectories) {
    html += fmt::format("<h3>{}</h3><div class=\"meaning note\">{} · scale {} to {}</div><div class=\"multiples-wrap\">{}</div>",
                        escape_html(trajectory.name), escape_html(trajectory.meaning), format_number(trajectory.low),
                        format_number(trajectory.high), multiples_svg(view, trajectory));
    if (options.head_plots) {
      html += fmt::format("<p class=\"note\">As PNG: <a href=\"plots/{0}\">plots/{0}</a></p>",
                          trajectory.plot_file);
    }
    for (int layer = 0; layer < comparison.layers; ++layer) {
      for (int head = 0; head < comparison.heads; ++head) {
        const std::size_t index = static_cast<std::size_t>(layer) * static_cast<std::size_t>(comparison.heads) +
                                  static_cast<std::size_t>(head);
        Json scores = Json::array();
        for (std::size_t run = 0; run < view.run_count(); ++run) {
          scores.push_back({valid_utf8(run_title(comparison.runs[run])), format_number(trajectory.values[index][run], 3)});
        }
        head_info.push_back({{"id", fmt::format("{} · {}", head_id(comparison.model_layer(layer), head), valid_utf8(trajectory.name))},
                             {"labels", {primary_path(comparison, layer, head)}},
                             {"scores", std::move(scores)}});
      }
    }
  }
  return html + "</section>\n";
}

}  // namespace headscan
