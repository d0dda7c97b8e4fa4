// plots/attention/L{l}H{h}_<k>.png (one head on one example, tokens on both axes) and
// plots/induction.png (probe stripes of the top induction heads).
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "reports/plots.h"
#include "reports/text.h"

namespace headscan {

namespace {

constexpr double kTokenLabelWidth = 110;  // pixels, ellipsized beyond

// The repeat length of a probe sequence [BOS] R R R R: the smallest p with token[i] == token[i-p]
// for every i > p (position 0 is BOS); 0 when there is none.
std::size_t repeat_period(const ExampleSequence& probe) {
  const std::size_t length = probe.tokens.size();
  for (std::size_t period = 1; period + 1 < length; ++period) {
    bool repeats = true;
    for (std::size_t i = 1 + period; i < length && repeats; ++i) repeats = probe.tokens[i] == probe.tokens[i - period];
    if (repeats) return period;
  }
  return 0;
}

// Mean attention of one head over the probes that have the length of the first one: [T][T].
std::vector<double> mean_probe_attention(const std::vector<ExampleSequence>& probes, int layer, int head) {
  const std::size_t length = probes.front().tokens.size();
  std::vector<double> mean(length * length, 0.0);
  int count = 0;
  for (const auto& probe : probes) {
    if (probe.tokens.size() != length) continue;
    for (std::size_t q = 0; q < length; ++q) {
      for (std::size_t k = 0; k < length; ++k) mean[q * length + k] += probe.weight(layer, head, q, k);
    }
    ++count;
  }
  for (double& value : mean) value /= std::max(count, 1);
  return mean;
}

}  // namespace

std::size_t attention_plots_per_head(const ReportData& data, std::size_t examples) {
  const std::size_t per_head = data.layers * data.heads > 64 ? 1 : 2;
  return std::min(per_head, examples);
}

void plot_attention(const ExampleSequence& example, int layer, int head, const std::string& title,
                    const std::filesystem::path& path) {
  const std::size_t length = example.tokens.size();
  const double cell = std::floor(std::clamp(720.0 / std::max<std::size_t>(length, 1), 9.0, 40.0));
  TextStyle token;
  token.size = std::clamp(cell - 2, 8.0, 13.0);
  token.max_width = kTokenLabelWidth;
  token.baseline = Baseline::middle;
  std::vector<std::string> labels;
  double label_width = 0;  // the widest token label, at most kTokenLabelWidth
  {
    const PngCanvas measuring(1, 1);
    for (const auto& text : example.tokens) {
      labels.push_back(display_token(text));
      label_width = std::max(label_width, std::min(kTokenLabelWidth, measuring.measure(labels.back(), token).width));
    }
  }
  const double left = label_width + 40;
  const double top = label_width + 60;
  const double size = cell * static_cast<double>(length);
  TextStyle heading;
  heading.size = 15;
  heading.bold = true;
  // Wide enough for the title, unless the title is very long.
  const double title_width = std::min(PngCanvas(1, 1).measure(title, heading).width + 24, 900.0);
  PngCanvas canvas(static_cast<int>(std::max({left + size + 30, 420.0, title_width})), static_cast<int>(top + size + 80));
  heading.max_width = canvas.width() - 24;
  canvas.text(title, 12, 10, heading);

  for (std::size_t q = 0; q < length; ++q) {
    for (std::size_t k = 0; k < length; ++k) {
      canvas.fill_rect(left + k * cell, top + q * cell, cell, cell, attention_colour(example.weight(layer, head, q, k)));
    }
  }
  canvas.stroke_rect(left, top, size, size, {0.6, 0.6, 0.6}, 0.5);
  if (cell >= 30) {
    TextStyle value;
    value.size = std::min(11.0, cell * 0.34);
    value.anchor = Anchor::center;
    value.baseline = Baseline::middle;
    for (std::size_t q = 0; q < length; ++q) {
      for (std::size_t k = 0; k < length; ++k) {
        const double weight = example.weight(layer, head, q, k);
        if (weight < 0.05) continue;
        value.colour = text_colour_on(attention_colour(weight));
        canvas.text(format_number(weight), left + (k + 0.5) * cell, top + (q + 0.5) * cell, value);
      }
    }
  }

  for (std::size_t i = 0; i < length; ++i) {
    const bool special = i < example.special.size() && example.special[i];
    token.colour = special ? Rgb{0.55, 0.55, 0.55} : Rgb{0, 0, 0};
    const std::string& text = labels[i];
    // Query labels right-aligned left of the rows; key labels rotated up above the columns.
    const TextSize measured = canvas.measure(text, token);
    token.anchor = Anchor::left;
    token.angle = 0;
    canvas.text(text, left - 6 - std::min(measured.width, kTokenLabelWidth), top + (i + 0.5) * cell, token);
    token.angle = M_PI / 2;
    canvas.text(text, left + (i + 0.5) * cell, top - 6, token);
  }
  TextStyle axis;
  axis.size = 12;
  axis.colour = {0.3, 0.3, 0.3};
  axis.anchor = Anchor::right;
  axis.baseline = Baseline::bottom;
  canvas.text("keys (attended) →", left + size, top - label_width - 10, axis);
  axis.anchor = Anchor::center;
  axis.angle = M_PI / 2;
  canvas.text("queries ↓", 16, top + size / 2, axis);
  draw_colour_bar(canvas, left + 60, top + size + 22, std::min(300.0, size - 60), 12, 0, 1, attention_colour, "weight");
  canvas.save(path);
}

bool plot_induction(const ReportData& data, const std::vector<ExampleSequence>& probes, const std::filesystem::path& path) {
  const ScoreColumn* induction = data.score("induction");
  if (probes.empty() || induction == nullptr) return false;
  std::vector<std::pair<double, std::size_t>> ranked;  // (score, head index), heads with a score
  for (std::size_t i = 0; i < data.head_list.size(); ++i) {
    if (induction->values[i]) ranked.emplace_back(*induction->values[i], i);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  const std::size_t shown = std::min<std::size_t>(6, ranked.size());

  const ExampleSequence& probe = probes.front();
  const std::size_t length = probe.tokens.size();
  const std::size_t period = repeat_period(probe);
  const double panel = 260;
  const double cell = panel / static_cast<double>(std::max<std::size_t>(length, 1));
  const int columns = static_cast<int>(std::min<std::size_t>(3, shown));
  const int rows = static_cast<int>((shown + 2) / 3);
  PngCanvas canvas(static_cast<int>(40 + columns * (panel + 40)), static_cast<int>(110 + rows * (panel + 60)));
  TextStyle heading;
  heading.size = 16;
  heading.bold = true;
  canvas.text("Induction: attention on probe sequences [BOS] R R R R", 20, 12, heading);
  TextStyle note;
  note.size = 12;
  note.colour = {0.35, 0.35, 0.35};
  note.max_width = canvas.width() - 40;
  canvas.text(fmt::format("mean over {} probe{}; an induction head draws a stripe {} below the diagonal (the token "
                          "after the earlier occurrence); grey lines mark the repeats",
                          probes.size(), probes.size() == 1 ? "" : "s",
                          period > 1 ? std::to_string(period - 1) : std::string("one repeat")),
              20, 36, note);

  TextStyle title;
  title.size = 13;
  title.bold = true;
  for (std::size_t n = 0; n < shown; ++n) {
    const auto& info = data.head_list[ranked[n].second];
    const double x = 20 + static_cast<double>(n % 3) * (panel + 40);
    const double y = 100 + static_cast<double>(n / 3) * (panel + 60);
    canvas.text(fmt::format("{}  induction {}", info.id(), format_number(ranked[n].first)), x, y - 24, title);
    const std::vector<double> mean = mean_probe_attention(probes, info.layer, info.head);
    for (std::size_t q = 0; q < length; ++q) {
      for (std::size_t k = 0; k < length; ++k) {
        canvas.fill_rect(x + k * cell, y + q * cell, cell + 0.3, cell + 0.3, attention_colour(mean[q * length + k]));
      }
    }
    if (period > 0) {
      for (std::size_t boundary = 1 + period; boundary < length; boundary += period) {
        canvas.line(x + boundary * cell, y, x + boundary * cell, y + panel, {0.7, 0.7, 0.7}, 0.5);
        canvas.line(x, y + boundary * cell, x + panel, y + boundary * cell, {0.7, 0.7, 0.7}, 0.5);
      }
    }
    canvas.stroke_rect(x, y, panel, panel, {0.5, 0.5, 0.5}, 0.75);
  }
  canvas.save(path);
  return true;
}

}  // namespace headscan
