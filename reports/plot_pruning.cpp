// plots/pruning.png (--ablation): the mean loss as more and more heads are removed, least important
// first (Michel et al. 2019, §4.2) against random orders.
#include <algorithm>
#include <cmath>

#include <cairo.h>
#include <fmt/format.h>

#include "reports/plots.h"

namespace headscan {

namespace {

struct Frame {
  double left, top, width, height;
  ValueAxis axis;

  double x(double fraction) const { return left + std::clamp(fraction, 0.0, 1.0) * width; }
  double y(double loss) const { return top + height - (loss - axis.low) / (axis.high - axis.low) * height; }
};

// A line through the points that have a value; markers "circle" or "square" on each, or none.
void draw_curve(PngCanvas& canvas, const Frame& frame, const std::vector<std::pair<double, double>>& points,
                const Rgb& colour, double width, const char* marker) {
  cairo_t* cairo = canvas.cairo();
  cairo_set_source_rgb(cairo, colour.r, colour.g, colour.b);
  cairo_set_line_width(cairo, width);
  cairo_set_line_join(cairo, CAIRO_LINE_JOIN_ROUND);
  for (std::size_t i = 0; i < points.size(); ++i) {
    const double x = frame.x(points[i].first), y = frame.y(points[i].second);
    if (i == 0) cairo_move_to(cairo, x, y); else cairo_line_to(cairo, x, y);
  }
  cairo_stroke(cairo);
  if (marker == nullptr) return;
  for (const auto& [fraction, loss] : points) {
    const double x = frame.x(fraction), y = frame.y(loss);
    if (std::string_view(marker) == "circle") {
      cairo_arc(cairo, x, y, 4, 0, 2 * M_PI);
    } else {
      cairo_rectangle(cairo, x - 3.5, y - 3.5, 7, 7);
    }
    cairo_fill(cairo);
  }
}

void draw_frame(PngCanvas& canvas, const Frame& frame) {
  const Rgb axis_colour{0.3, 0.3, 0.3};
  TextStyle tick;
  tick.size = 11;
  tick.colour = axis_colour;
  tick.anchor = Anchor::right;
  tick.baseline = Baseline::middle;
  for (double value = frame.axis.low; value <= frame.axis.high + frame.axis.step / 2; value += frame.axis.step) {
    const double y = frame.y(value);
    canvas.line(frame.left, y, frame.left + frame.width, y, {0.9, 0.9, 0.9});
    canvas.line(frame.left - 4, y, frame.left, y, axis_colour);
    canvas.text(format_number(value, frame.axis.digits), frame.left - 7, y, tick);
  }
  tick.anchor = Anchor::center;
  tick.baseline = Baseline::top;
  for (int percent = 0; percent <= 100; percent += 10) {
    const double x = frame.x(percent / 100.0);
    canvas.line(x, frame.top + frame.height, x, frame.top + frame.height + 4, axis_colour);
    if (percent % 20 == 0) canvas.text(fmt::format("{} %", percent), x, frame.top + frame.height + 6, tick);
  }
  canvas.line(frame.left, frame.top + frame.height, frame.left + frame.width, frame.top + frame.height, axis_colour);
  canvas.line(frame.left, frame.top, frame.left, frame.top + frame.height, axis_colour);
  TextStyle title;
  title.size = 12;
  title.colour = {0.2, 0.2, 0.2};
  title.anchor = Anchor::center;
  title.baseline = Baseline::top;
  canvas.text("share of heads removed", frame.left + frame.width / 2, frame.top + frame.height + 24, title);
  title.angle = M_PI / 2;
  title.baseline = Baseline::bottom;
  canvas.text("mean loss (nats)", frame.left - 46, frame.top + frame.height / 2, title);
}

}  // namespace

ValueAxis round_value_axis(double min, double max, int ticks) {
  if (!(max > min)) {  // one value: a unit around it
    min -= 0.5;
    max += 0.5;
  }
  const double raw_step = (max - min) / std::max(ticks, 1);
  const int exponent = static_cast<int>(std::floor(std::log10(raw_step)));
  const double magnitude = std::pow(10.0, exponent);
  ValueAxis axis;
  double factor = 10;
  for (const double candidate : {1.0, 2.0, 2.5, 5.0}) {
    if (candidate * magnitude >= raw_step * (1 - 1e-9)) {
      factor = candidate;
      break;
    }
  }
  axis.step = factor * magnitude;
  axis.low = std::floor(min / axis.step + 1e-9) * axis.step;
  axis.high = std::ceil(max / axis.step - 1e-9) * axis.step;
  if (axis.high <= axis.low) axis.high = axis.low + axis.step;
  const int step_exponent = factor == 10 ? exponent + 1 : exponent;
  axis.digits = std::max(0, -step_exponent) + (factor == 2.5 ? 1 : 0);
  return axis;
}

bool plot_pruning(const ReportData& data, const std::filesystem::path& path) {
  if (!data.ablation) return false;
  const AblationSummary& ablation = *data.ablation;
  const auto range = ablation.loss_range();
  if (!range) return false;

  PngCanvas canvas(760, 470);
  const Frame frame{84, 104, 640, 290, round_value_axis(range->first, range->second, 5)};
  TextStyle heading;
  heading.size = 16;
  heading.bold = true;
  canvas.text("Pruning: loss as heads are removed", 20, 12, heading);
  TextStyle note;
  note.size = 12;
  note.colour = {0.35, 0.35, 0.35};
  note.max_width = canvas.width() - 40;
  std::string about = "heads removed (ξ = 0) least important first, or in random order";
  if (ablation.sequences) about += fmt::format("; mean loss over {} sequences", *ablation.sequences);
  canvas.text(about, 20, 36, note);
  draw_frame(canvas, frame);

  const PruningColours& colours = pruning_colours();
  for (std::size_t order = 0; order < ablation.random_orders; ++order) {
    std::vector<std::pair<double, double>> points;
    for (const auto& point : ablation.pruning) {
      if (order < point.random_orders.size()) points.emplace_back(point.fraction, point.random_orders[order]);
    }
    draw_curve(canvas, frame, points, colours.each_random_order, 1, nullptr);
  }
  std::vector<std::pair<double, double>> random, importance;
  for (const auto& point : ablation.pruning) {
    if (point.random_order) random.emplace_back(point.fraction, *point.random_order);
    if (point.importance_order) importance.emplace_back(point.fraction, *point.importance_order);
  }
  draw_curve(canvas, frame, random, colours.random_order, 2, "square");
  draw_curve(canvas, frame, importance, colours.importance_order, 2.5, "circle");

  // Legend above the frame, one entry after the other.
  TextStyle legend;
  legend.size = 12;
  legend.baseline = Baseline::middle;
  double x = frame.left;
  const double y = 72;
  const auto entry = [&](const Rgb& colour, double width, const std::string& text) {
    canvas.line(x, y, x + 26, y, colour, width);
    canvas.text(text, x + 32, y, legend);
    x += 32 + canvas.measure(text, legend).width + 24;
  };
  entry(colours.importance_order, 2.5, "importance order");
  entry(colours.random_order, 2, ablation.random_orders > 1 ? fmt::format("random order (mean of {})", ablation.random_orders)
                                                            : std::string("random order"));
  if (ablation.random_orders > 1) entry(colours.each_random_order, 1, "each random order");
  canvas.save(path);
  return true;
}

}  // namespace headscan
