#include "reports/plots.h"

#include <algorithm>
#include <cmath>

namespace headscan {

GridLayout make_grid_layout(const ReportData& data, double left, double top) {
  GridLayout grid;
  grid.layers = data.layers;
  grid.layer_names = data.map_layers;
  grid.heads = data.heads;
  grid.left = left;
  grid.top = top;
  grid.cell = std::floor(std::clamp(720.0 / std::max(data.layers, data.heads), 6.0, 56.0));
  return grid;
}

void draw_grid_axes(PngCanvas& canvas, const GridLayout& grid, const std::string& title) {
  TextStyle heading;
  heading.size = 16;
  heading.bold = true;
  canvas.text(title, grid.left, 12, heading);

  TextStyle tick;
  tick.size = std::clamp(grid.cell * 0.45, 8.0, 12.0);
  tick.colour = {0.25, 0.25, 0.25};
  // Label every tick when they fit, else every 2nd, 4th, … so that labels never overlap.
  const int every = static_cast<int>(std::ceil(16.0 / grid.cell));
  tick.anchor = Anchor::center;
  tick.baseline = Baseline::bottom;
  for (int head = 0; head < grid.heads; head += every) {
    canvas.text(std::to_string(head), grid.x(head) + grid.cell / 2, grid.top - 3, tick);
  }
  tick.anchor = Anchor::right;
  tick.baseline = Baseline::middle;
  for (int layer = 0; layer < grid.layers; layer += every) {
    canvas.text(std::to_string(grid.layer_names[static_cast<std::size_t>(layer)]), grid.left - 5,
                grid.y(layer) + grid.cell / 2, tick);
  }
  TextStyle axis;
  axis.size = 12;
  axis.colour = {0.25, 0.25, 0.25};
  axis.anchor = Anchor::center;
  axis.baseline = Baseline::bottom;
  canvas.text("head", grid.left + grid.width() / 2, grid.top - 18, axis);
  axis.angle = M_PI / 2;
  axis.baseline = Baseline::bottom;
  canvas.text("layer", grid.left - 28, grid.top + grid.height() / 2, axis);
}

}  // namespace headscan
