// plots/layers.png: per layer, the primary label counts (stacked bars), and the mean distance and
// mean entropy of its heads.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "reports/plots.h"

namespace headscan {

namespace {

struct Panel {
  double left, top, width, height;
};

// The frame, title and axes of a panel whose value axis runs from 0 to `high`, with ticks at
// `ticks` (four equal steps when empty), written with `digits` decimals.
void draw_panel_frame(PngCanvas& canvas, const Panel& panel, const std::vector<int>& layer_names, const std::string& title, double high,
                      int digits, std::vector<double> ticks = {}) {
  TextStyle heading;
  heading.size = 14;
  heading.bold = true;
  canvas.text(title, panel.left, panel.top - 30, heading);
  canvas.line(panel.left, panel.top + panel.height, panel.left + panel.width, panel.top + panel.height, {0.3, 0.3, 0.3});
  canvas.line(panel.left, panel.top, panel.left, panel.top + panel.height, {0.3, 0.3, 0.3});
  TextStyle tick;
  tick.size = 10;
  tick.colour = {0.3, 0.3, 0.3};
  tick.anchor = Anchor::right;
  tick.baseline = Baseline::middle;
  if (ticks.empty()) {
    for (int i = 0; i <= 4; ++i) ticks.push_back(high * i / 4.0);
  }
  for (const double value : ticks) {
    const double y = panel.top + panel.height - panel.height * (high > 0 ? value / high : 0.0);
    canvas.line(panel.left - 3, y, panel.left, y, {0.3, 0.3, 0.3});
    if (value > 0) canvas.line(panel.left + 1, y, panel.left + panel.width, y, {0.9, 0.9, 0.9});
    canvas.text(format_number(value, digits), panel.left - 5, y, tick);
  }
  tick.anchor = Anchor::center;
  tick.baseline = Baseline::top;
  const int layers = static_cast<int>(layer_names.size());
  const double step = panel.width / std::max(layers, 1);
  const int every = static_cast<int>(std::ceil(18.0 / step));
  for (int layer = 0; layer < layers; layer += every) {
    canvas.text(std::to_string(layer_names[static_cast<std::size_t>(layer)]), panel.left + step * (layer + 0.5),
                panel.top + panel.height + 4, tick);
  }
  tick.size = 11;
  canvas.text("layer", panel.left + panel.width / 2, panel.top + panel.height + 18, tick);
}

void draw_line_panel(PngCanvas& canvas, const Panel& panel, const ReportData& data, const std::string& score,
                     const std::string& title) {
  std::vector<std::optional<double>> means;
  double high = 0;
  for (int layer = 0; layer < data.layers; ++layer) {
    means.push_back(data.layer_mean(score, layer));
    if (means.back()) high = std::max(high, *means.back());
  }
  if (score == "entropy" || high <= 0) {
    high = 1;
  } else {
    // A round top with four round ticks (1, 2, 2.5 or 5 × 10^k apart) and some room above the data.
    const double raw_step = high * 1.08 / 4;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw_step)));
    double step = 10 * magnitude;
    for (const double factor : {1.0, 2.0, 2.5, 5.0}) {
      if (factor * magnitude >= raw_step) {
        step = factor * magnitude;
        break;
      }
    }
    high = 4 * step;
  }
  draw_panel_frame(canvas, panel, data.map_layers, title, high, high >= 20 ? 0 : (high >= 4 ? 1 : 2));
  if (std::none_of(means.begin(), means.end(), [](const auto& m) { return m.has_value(); })) {
    TextStyle note;
    note.size = 12;
    note.colour = {0.5, 0.5, 0.5};
    note.anchor = Anchor::center;
    note.baseline = Baseline::middle;
    canvas.text("not in heads.json", panel.left + panel.width / 2, panel.top + panel.height / 2, note);
    return;
  }
  const double step = panel.width / data.layers;
  const Rgb colour{0.0, 0.447, 0.698};
  bool joined = false;  // the previous layer has a point to join
  double previous_x = 0, previous_y = 0;
  for (int layer = 0; layer < data.layers; ++layer) {
    if (!means[layer]) {
      joined = false;
      continue;
    }
    const double x = panel.left + step * (layer + 0.5);
    const double y = panel.top + panel.height - panel.height * (*means[layer] / high);
    if (joined) canvas.line(previous_x, previous_y, x, y, colour, 2);
    canvas.fill_rect(x - 3, y - 3, 6, 6, colour);
    previous_x = x;
    previous_y = y;
    joined = true;
  }
}

}  // namespace

std::vector<int> count_ticks(int high) {
  const int step = std::max(1, (high + 3) / 4);  // ceil(high / 4): at most four steps
  std::vector<int> ticks;
  for (int value = 0; value <= std::max(high, 0); value += step) ticks.push_back(value);
  return ticks;
}

void plot_layer_summary(const ReportData& data, const std::filesystem::path& path) {
  const double panel_width = std::clamp(data.layers * 28.0, 240.0, 420.0);
  const Panel counts{60, 60, panel_width, 260};
  const Panel distance{counts.left + panel_width + 200, 60, panel_width, 260};
  const Panel entropy{distance.left + panel_width + 70, 60, panel_width, 260};
  PngCanvas canvas(static_cast<int>(entropy.left + panel_width + 30), 370);

  // Stacked bars of primary labels, bottom-up in label order.
  const std::vector<int> whole = count_ticks(data.heads);
  draw_panel_frame(canvas, counts, data.map_layers, "Heads per layer by primary label", data.heads, 0,
                   std::vector<double>(whole.begin(), whole.end()));
  const double step = counts.width / data.layers;
  std::map<std::string, int> seen;
  for (int layer = 0; layer < data.layers; ++layer) {
    double y = counts.top + counts.height;
    for (const auto& label : report_labels()) {
      int count = 0;
      for (int head = 0; head < data.heads; ++head) count += data.at(layer, head).primary == label;
      if (count == 0) continue;
      seen[label] += count;
      const double h = counts.height * count / data.heads;
      canvas.fill_rect(counts.left + step * layer + step * 0.15, y - h, step * 0.7, h, label_colour(label));
      y -= h;
    }
  }
  TextStyle legend;
  legend.size = 11;
  legend.baseline = Baseline::middle;
  double y = counts.top;
  for (const auto& label : report_labels()) {
    if (!seen.count(label)) continue;
    canvas.fill_rect(counts.left + counts.width + 16, y - 6, 12, 12, label_colour(label));
    canvas.text(label, counts.left + counts.width + 33, y, legend);
    y += 18;
  }

  draw_line_panel(canvas, distance, data, "mean_distance", "Mean attention distance (tokens)");
  draw_line_panel(canvas, entropy, data, "entropy", "Mean normalized entropy");
  canvas.save(path);
}

}  // namespace headscan
