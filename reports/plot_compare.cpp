// The plots of `headscan compare`: the phase-change figure, the small multiples of a score and
// the diff map of a score (reports/compare_report.h).
#include <algorithm>
#include <cmath>

#include <cairo.h>
#include <fmt/format.h>

#include "reports/compare_report.h"
#include "reports/plots.h"

namespace headscan {
namespace {

// A line through the points, with a marker on each: "circle" or "square".
void draw_series(PngCanvas& canvas, const std::vector<std::pair<double, double>>& points, const Rgb& colour,
                 bool circles) {
  cairo_t* cairo = canvas.cairo();
  cairo_set_source_rgb(cairo, colour.r, colour.g, colour.b);
  cairo_set_line_width(cairo, 2.5);
  cairo_set_line_join(cairo, CAIRO_LINE_JOIN_ROUND);
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (i == 0) cairo_move_to(cairo, points[i].first, points[i].second);
    else cairo_line_to(cairo, points[i].first, points[i].second);
  }
  cairo_stroke(cairo);
  for (const auto& [x, y] : points) {
    if (circles) cairo_arc(cairo, x, y, 4.5, 0, 2 * M_PI);
    else cairo_rectangle(cairo, x - 4, y - 4, 8, 8);
    cairo_fill(cairo);
  }
}

void dashed_line(PngCanvas& canvas, double x0, double y0, double x1, double y1, const Rgb& colour) {
  cairo_t* cairo = canvas.cairo();
  const double dashes[] = {5, 4};
  cairo_save(cairo);
  cairo_set_dash(cairo, dashes, 2, 0);
  canvas.line(x0, y0, x1, y1, colour, 1.2);
  cairo_restore(cairo);
}

// The grid of small charts, one per head: layers are rows, heads columns.
struct MultiplesLayout {
  double left = 64;
  double top = 112;
  double width = 60;   // of one chart
  double height = 38;
  double gap = 4;

  double x(int head) const { return left + head * (width + gap); }
  double y(int layer) const { return top + layer * (height + gap); }
};

MultiplesLayout multiples_layout(int layers, int heads) {
  MultiplesLayout layout;
  layout.width = std::floor(std::clamp(1100.0 / heads - layout.gap, 24.0, 160.0));
  layout.height = std::floor(std::max(16.0, layout.width * 0.62));
  (void)layers;
  return layout;
}

}  // namespace

void plot_phase_change(const CompareView& view, const std::filesystem::path& path) {
  const CompareColours& colours = compare_colours();
  PngCanvas canvas(860, 500);
  const double left = 84, top = 110, width = 660, height = 290;
  auto x_of = [&](std::size_t run) { return left + run_position(view, run) * width; };

  TextStyle heading;
  heading.size = 16;
  heading.bold = true;
  canvas.text("Phase change: induction heads and in-context learning", 20, 12, heading);
  TextStyle note;
  note.size = 12;
  note.colour = {0.35, 0.35, 0.35};
  note.max_width = canvas.width() - 40;
  canvas.text("best induction score over heads (left axis); in-context-learning gap: the loss on the first repeat",
              20, 36, note);
  canvas.text("of the induction probes minus the mean loss on the later repeats (right axis, nats)", 20, 52, note);

  const ValueAxis& gap_axis = view.gap_axis;
  auto y_induction = [&](double score) { return top + height - std::clamp(score, 0.0, 1.0) * height; };
  auto y_gap = [&](double gap) { return top + height - (gap - gap_axis.low) / (gap_axis.high - gap_axis.low) * height; };

  const Rgb axis_colour{0.3, 0.3, 0.3};
  TextStyle tick;
  tick.size = 11;
  tick.baseline = Baseline::middle;
  for (int i = 0; i <= 5; ++i) {
    const double y = y_induction(i / 5.0);
    canvas.line(left, y, left + width, y, {0.92, 0.92, 0.92});
    tick.anchor = Anchor::right;
    tick.colour = colours.induction;
    canvas.text(format_number(i / 5.0, 1), left - 7, y, tick);
  }
  tick.anchor = Anchor::left;
  tick.colour = colours.in_context_gap;
  for (double value = gap_axis.low; value <= gap_axis.high + gap_axis.step / 2; value += gap_axis.step) {
    canvas.line(left + width, y_gap(value), left + width + 4, y_gap(value), axis_colour);
    canvas.text(format_number(value, gap_axis.digits), left + width + 7, y_gap(value), tick);
  }
  canvas.line(left, top + height, left + width, top + height, axis_colour);
  canvas.line(left, top, left, top + height, axis_colour);
  canvas.line(left + width, top, left + width, top + height, axis_colour);

  // The run axis: every run's step (or name), fewer labels when they would crowd.
  tick.anchor = Anchor::center;
  tick.baseline = Baseline::top;
  tick.colour = axis_colour;
  const std::size_t every = std::max<std::size_t>(1, view.run_count() * 70 / static_cast<std::size_t>(width) + 1);
  for (std::size_t run = 0; run < view.run_count(); ++run) {
    canvas.line(x_of(run), top + height, x_of(run), top + height + 4, axis_colour);
    if (run % every != 0 && !(run + 1 == view.run_count() && run % every >= (every + 1) / 2)) continue;
    const CompareRun& found = view.comparison->runs[run];
    tick.max_width = 110;
    canvas.text(view.by_step && found.step ? std::to_string(*found.step) : found.name, x_of(run), top + height + 6, tick);
  }
  TextStyle title;
  title.size = 12;
  title.colour = {0.2, 0.2, 0.2};
  title.anchor = Anchor::center;
  canvas.text(view.by_step ? "training step (runs evenly spaced)" : "run", left + width / 2, top + height + 26, title);
  title.angle = M_PI / 2;
  title.baseline = Baseline::bottom;
  title.colour = colours.induction;
  canvas.text("best induction score", left - 40, top + height / 2, title);
  title.angle = -M_PI / 2;
  title.colour = colours.in_context_gap;
  canvas.text("in-context-learning gap (nats)", left + width + 50, top + height / 2, title);

  // Where each measure first passes its mark: 0.5 for induction, 1 nat for the gap.
  dashed_line(canvas, left, y_induction(kInductionFormed), left + width, y_induction(kInductionFormed),
              {0.55, 0.72, 0.85});
  if (kInContextGapFormed >= gap_axis.low && kInContextGapFormed <= gap_axis.high) {
    dashed_line(canvas, left, y_gap(kInContextGapFormed), left + width, y_gap(kInContextGapFormed), {0.93, 0.7, 0.55});
  }
  std::vector<std::pair<double, double>> induction, gap;
  for (std::size_t run = 0; run < view.run_count(); ++run) {
    const RunFindings& found = view.findings[run];
    if (found.best_induction) induction.emplace_back(x_of(run), y_induction(*found.best_induction));
    if (found.in_context_gap) gap.emplace_back(x_of(run), y_gap(*found.in_context_gap));
  }
  draw_series(canvas, gap, colours.in_context_gap, false);
  draw_series(canvas, induction, colours.induction, true);

  TextStyle legend;
  legend.size = 12;
  legend.baseline = Baseline::middle;
  double x = left;
  const double y = 78;
  auto entry = [&](const Rgb& colour, const std::string& text) {
    canvas.line(x, y, x + 26, y, colour, 2.5);
    canvas.text(text, x + 32, y, legend);
    x += 32 + canvas.measure(text, legend).width + 24;
  };
  auto at = [&](const std::optional<std::size_t>& run) {
    if (!run) return std::string("never");
    return "at " + run_title(view.comparison->runs[*run]);
  };
  entry(colours.induction, induction.empty() ? std::string("best induction score: none (no probes)")
                                             : "best induction score (> 0.5 " + at(view.phase.induction_run) + ")");
  entry(colours.in_context_gap, gap.empty() ? std::string("in-context-learning gap: none (no logits)")
                                            : "in-context-learning gap (≥ 1 nat " + at(view.phase.gap_run) + ")");
  canvas.save(path);
}

void plot_trajectories(const CompareView& view, const Trajectory& trajectory, const std::filesystem::path& path) {
  const Comparison& comparison = *view.comparison;
  const CompareColours& colours = compare_colours();
  const MultiplesLayout layout = multiples_layout(comparison.layers, comparison.heads);
  const int width = static_cast<int>(std::max(layout.x(comparison.heads) + 30, 620.0));
  const int height = static_cast<int>(layout.y(comparison.layers) + 30);
  PngCanvas canvas(width, height);
  TextStyle heading;
  heading.size = 16;
  heading.bold = true;
  canvas.text(fmt::format("{} across {} runs", trajectory.name, view.run_count()), 20, 12, heading);
  TextStyle note;
  note.size = 12;
  note.colour = {0.35, 0.35, 0.35};
  note.max_width = width - 40;
  canvas.text(fmt::format("one chart per head, runs left to right{}, scale {} to {}", view.by_step ? " by step" : "",
                          format_number(trajectory.low), format_number(trajectory.high)),
              20, 36, note);
  canvas.text("orange: the head's primary label changed; line colour: its last primary label", 20, 52, note);
  if (!trajectory.meaning.empty()) canvas.text(trajectory.meaning, 20, 68, note);

  TextStyle tick;
  tick.size = 11;
  tick.colour = {0.25, 0.25, 0.25};
  tick.anchor = Anchor::center;
  tick.baseline = Baseline::bottom;
  const int every = static_cast<int>(std::ceil(18.0 / (layout.width + layout.gap)));
  for (int head = 0; head < comparison.heads; head += every) {
    canvas.text(std::to_string(head), layout.x(head) + layout.width / 2, layout.top - 3, tick);
  }
  tick.anchor = Anchor::right;
  tick.baseline = Baseline::middle;
  const int layer_every = static_cast<int>(std::ceil(14.0 / (layout.height + layout.gap)));
  for (int layer = 0; layer < comparison.layers; layer += layer_every) {
    canvas.text("L" + std::to_string(comparison.model_layer(layer)), layout.left - 6, layout.y(layer) + layout.height / 2, tick);
  }

  cairo_t* cairo = canvas.cairo();
  for (int layer = 0; layer < comparison.layers; ++layer) {
    for (int head = 0; head < comparison.heads; ++head) {
      const std::size_t index = static_cast<std::size_t>(layer) * static_cast<std::size_t>(comparison.heads) +
                                static_cast<std::size_t>(head);
      const double x0 = layout.x(head), y0 = layout.y(layer);
      const bool changed = view.primary_changed[index];
      canvas.fill_rect(x0, y0, layout.width, layout.height, changed ? colours.changed_fill : Rgb{0.975, 0.975, 0.98});
      canvas.stroke_rect(x0, y0, layout.width, layout.height, changed ? colours.changed_frame : Rgb{0.85, 0.85, 0.87},
                         changed ? 1.5 : 0.6);
      auto y_of = [&](double value) {
        return y0 + layout.height - 2 - trajectory.fraction(value) * (layout.height - 4);
      };
      if (trajectory.threshold && *trajectory.threshold > trajectory.low && *trajectory.threshold < trajectory.high) {
        canvas.line(x0 + 1, y_of(*trajectory.threshold), x0 + layout.width - 1, y_of(*trajectory.threshold),
                    {0.8, 0.8, 0.82}, 0.8);
      }
      const Rgb ink = trajectory_colour(view.runs.back().head_list[index].primary);
      cairo_set_source_rgb(cairo, ink.r, ink.g, ink.b);
      cairo_set_line_width(cairo, 1.6);
      bool started = false;
      for (std::size_t run = 0; run < view.run_count(); ++run) {
        const auto& value = trajectory.values[index][run];
        if (!value) continue;
        const double x = x0 + 3 + run_position(view, run) * (layout.width - 6);
        if (!started) cairo_move_to(cairo, x, y_of(*value));
        else cairo_line_to(cairo, x, y_of(*value));
        started = true;
      }
      cairo_stroke(cairo);
    }
  }
  canvas.save(path);
}

void plot_score_diff(const CompareView& view, const ScoreDiff& diff, const std::filesystem::path& path) {
  const Comparison& comparison = *view.comparison;
  const ReportData& last = view.runs.back();
  const GridLayout grid = make_grid_layout(last, 64, 90);
  const int width = static_cast<int>(std::max(grid.left + grid.width() + 40, 620.0));
  const int height = static_cast<int>(grid.top + grid.height() + 110);
  PngCanvas canvas(width, height);
  draw_grid_axes(canvas, grid, fmt::format("{}: {} − {}", diff.name, run_title(comparison.runs.back()),
                                           run_title(comparison.runs.front())));
  TextStyle note;
  note.size = 12;
  note.colour = {0.35, 0.35, 0.35};
  note.max_width = width - grid.left - 10;
  canvas.text("change from the first run to the last: red up, blue down, white unchanged; hatched: no value", grid.left,
              34, note);

  const double largest = diff.largest > 0 ? diff.largest : 1;
  TextStyle value_text;
  value_text.size = std::clamp(grid.cell * 0.28, 8.0, 12.0);
  value_text.anchor = Anchor::center;
  value_text.baseline = Baseline::middle;
  for (int layer = 0; layer < comparison.layers; ++layer) {
    for (int head = 0; head < comparison.heads; ++head) {
      const auto& change = diff.change[static_cast<std::size_t>(layer) * static_cast<std::size_t>(comparison.heads) +
                                       static_cast<std::size_t>(head)];
      const double x = grid.x(head), y = grid.y(layer);
      if (!change) {
        canvas.fill_rect(x, y, grid.cell, grid.cell, {0.93, 0.93, 0.93});
        canvas.line(x + 2, y + grid.cell - 2, x + grid.cell - 2, y + 2, {0.75, 0.75, 0.75});
        continue;
      }
      const Rgb fill = diverging((*change / largest + 1) / 2);
      canvas.fill_rect(x, y, grid.cell, grid.cell, fill);
      if (grid.cell >= 40) {
        value_text.colour = text_colour_on(fill);
        canvas.text(format_number(*change, 2), x + grid.cell / 2, y + grid.cell / 2, value_text);
      }
    }
  }
  const double bar_width = std::min(360.0, width - grid.left - 40);
  draw_colour_bar(canvas, grid.left + 10, grid.top + grid.height() + 44, bar_width, 14, -largest, largest, diverging, "");
  canvas.save(path);
}

}  // namespace headscan
