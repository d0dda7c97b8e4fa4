#pragma once
// PNG plots of the report (DESIGN.md, "Reports"), drawn with cairo and pango:
//   plots/heads.png                    layer × head map coloured by primary label, with legend
//   plots/score_<name>.png             one layer × head heatmap per score, with colour bar
//   plots/layers.png                   primary label counts, mean distance and entropy per layer
//   plots/attention/L{l}H{h}_<k>.png   attention of a head on corpus example k, tokens on both axes
//   plots/induction.png                probe stripes of the heads with the highest induction score
//   plots/pruning.png                  --ablation: loss against the share of heads removed

#include <filesystem>
#include <string>
#include <vector>

#include "reports/png_canvas.h"
#include "reports/report_data.h"
#include "reports/report_writer.h"

namespace headscan {

// How many corpus examples get an attention PNG per head: 2, or 1 for models with more than 64
// heads, so that a big model does not write thousands of files.
std::size_t attention_plots_per_head(const ReportData& data, std::size_t examples);

// File name of a score's heatmap: "score_" + the name reduced to [a-z0-9_] + ".png".
std::string score_plot_name(const std::string& score);

void plot_label_map(const ReportData& data, const std::filesystem::path& path,
                    const std::string& title = "Heads by primary label");
void plot_score_heatmap(const ReportData& data, const ScoreColumn& score, const std::filesystem::path& path);
void plot_layer_summary(const ReportData& data, const std::filesystem::path& path);
// The ticks of a count axis from 0 to `high` (heads per layer): whole numbers only, at most five,
// the same step apart (1, 2, 3, … so that 0 and a multiple near `high` are marked).
std::vector<int> count_ticks(int high);
void plot_attention(const ExampleSequence& example, int layer, int head, const std::string& title,
                    const std::filesystem::path& path);

// The heads with the highest "induction" score of heads.json; false (and nothing written) without
// probes or induction scores.
bool plot_induction(const ReportData& data, const std::vector<ExampleSequence>& probes,
                    const std::filesystem::path& path);

// Loss against the share of heads removed, in order of importance and in random orders (the mean
// and each order faintly); false (and nothing written) without --ablation's pruning points.
bool plot_pruning(const ReportData& data, const std::filesystem::path& path);

// A value axis from `low` to `high` in round steps (1, 2, 2.5 or 5 × 10^k), about `ticks` of them,
// covering [min, max]; shared by plots/pruning.png and its HTML figure.
struct ValueAxis {
  double low = 0;
  double high = 1;
  double step = 0.25;
  int digits = 2;  // decimals that show every tick exactly
};
ValueAxis round_value_axis(double min, double max, int ticks);

// The layer × head grid shared by the label map and the score heatmaps: layers are rows (layer 0
// on top), heads columns.
struct GridLayout {
  int layers = 0;
  std::vector<int> layer_names;  // the model's index of each row (attention map)
  int heads = 0;
  double left = 0;
  double top = 0;
  double cell = 0;  // square cells

  double x(int head) const { return left + head * cell; }
  double y(int layer) const { return top + layer * cell; }
  double width() const { return heads * cell; }
  double height() const { return layers * cell; }
};

// Cells sized so that the grid is at most about 720 × 720 pixels, placed at (left, top).
GridLayout make_grid_layout(const ReportData& data, double left, double top);

// Title above the grid and the "layer"/"head" axes with their tick labels.
void draw_grid_axes(PngCanvas& canvas, const GridLayout& grid, const std::string& title);

}  // namespace headscan
