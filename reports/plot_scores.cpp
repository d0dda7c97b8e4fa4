// plots/score_<name>.png: one layer × head heatmap per score, with its colour bar.
#include <algorithm>
#include <cctype>

#include "reports/plots.h"

namespace headscan {

std::string score_plot_name(const std::string& score) {
  std::string name;
  for (const char c : score) {
    const auto u = static_cast<unsigned char>(c);
    name += std::isalnum(u) ? static_cast<char>(std::tolower(u)) : '_';
  }
  return "score_" + name + ".png";
}

void plot_score_heatmap(const ReportData& data, const ScoreColumn& score, const std::filesystem::path& path) {
  const GridLayout grid = make_grid_layout(data, 64, 84);
  const int width = static_cast<int>(std::max(grid.left + grid.width() + 40, 560.0));
  const int height = static_cast<int>(grid.top + grid.height() + 110);
  PngCanvas canvas(width, height);
  draw_grid_axes(canvas, grid, score.name);
  if (!score.meaning.empty()) {
    TextStyle meaning;
    meaning.size = 12;
    meaning.colour = {0.35, 0.35, 0.35};
    meaning.max_width = width - grid.left - 10;
    canvas.text(score.meaning, grid.left, 34, meaning);
  }

  TextStyle value_text;
  value_text.size = std::clamp(grid.cell * 0.3, 8.0, 13.0);
  value_text.anchor = Anchor::center;
  value_text.baseline = Baseline::middle;
  for (std::size_t i = 0; i < data.head_list.size(); ++i) {
    const auto& info = data.head_list[i];
    const auto& value = score.values[i];
    const double x = grid.x(info.head);
    const double y = grid.y(info.layer);
    if (!value) {
      // No value: light grey with a diagonal, unlike any colour of the scale.
      canvas.fill_rect(x, y, grid.cell, grid.cell, {0.93, 0.93, 0.93});
      canvas.line(x + 2, y + grid.cell - 2, x + grid.cell - 2, y + 2, {0.75, 0.75, 0.75});
      continue;
    }
    const Rgb fill = score_colour(score, *value);
    canvas.fill_rect(x, y, grid.cell, grid.cell, fill);
    if (grid.cell >= 34) {
      value_text.colour = text_colour_on(fill);
      canvas.text(format_number(*value, std::abs(*value) >= 10 ? 1 : 2), x + grid.cell / 2, y + grid.cell / 2, value_text);
    }
  }
  const double bar_width = std::min(360.0, width - grid.left - 40);
  const double* marker = score.threshold ? &*score.threshold : nullptr;
  draw_colour_bar(canvas, grid.left + 10, grid.top + grid.height() + 44, bar_width, 14, score.low, score.high, score_colour_map(score),
                  "", marker);
  canvas.save(path);
}

}  // namespace headscan
