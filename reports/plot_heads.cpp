// plots/heads.png: the layer × head map coloured by primary label.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "reports/plots.h"

namespace headscan {

void plot_label_map(const ReportData& data, const std::filesystem::path& path, const std::string& title) {
  const GridLayout grid = make_grid_layout(data, 64, 70);
  const double legend_x = grid.left + grid.width() + 30;
  const int width = static_cast<int>(legend_x + 210);
  const int height = static_cast<int>(std::max(grid.top + grid.height() + 30, 70.0 + 24.0 * report_labels().size() + 40));
  PngCanvas canvas(width, height);
  draw_grid_axes(canvas, grid, title);

  std::map<std::string, int> counts;
  TextStyle tag;
  tag.size = std::clamp(grid.cell * 0.28, 7.0, 13.0);
  tag.anchor = Anchor::center;
  tag.baseline = Baseline::middle;
  for (const auto& info : data.head_list) {
    ++counts[info.primary];
    const Rgb fill = label_colour(info.primary);
    canvas.fill_rect(grid.x(info.head), grid.y(info.layer), grid.cell, grid.cell, fill);
    if (grid.cell >= 26) {
      tag.colour = text_colour_on(fill);
      std::string text = label_tag(info.primary);
      if (info.labels.size() > 1) text += "+";
      canvas.text(text, grid.x(info.head) + grid.cell / 2, grid.y(info.layer) + grid.cell / 2, tag);
    }
  }
  // White grid lines between cells.
  for (int head = 0; head <= grid.heads; ++head) canvas.line(grid.x(head), grid.top, grid.x(head), grid.top + grid.height(), {1, 1, 1}, 1.5);
  for (int layer = 0; layer <= grid.layers; ++layer) canvas.line(grid.left, grid.y(layer), grid.left + grid.width(), grid.y(layer), {1, 1, 1}, 1.5);

  TextStyle legend;
  legend.size = 13;
  legend.baseline = Baseline::middle;
  double y = grid.top;
  for (const auto& label : report_labels()) {
    const int count = counts.count(label) ? counts[label] : 0;
    canvas.fill_rect(legend_x, y, 18, 18, label_colour(label));
    canvas.stroke_rect(legend_x, y, 18, 18, {0.6, 0.6, 0.6}, 0.5);
    legend.colour = count ? Rgb{0, 0, 0} : Rgb{0.55, 0.55, 0.55};
    canvas.text(fmt::format("{} ({})", label, count), legend_x + 26, y + 9, legend);
    y += 24;
  }
  TextStyle note;
  note.size = 11;
  note.colour = {0.4, 0.4, 0.4};
  canvas.text("+ : the head has more labels", legend_x, y + 6, note);
  canvas.save(path);
}

}  // namespace headscan
