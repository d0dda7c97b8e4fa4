#pragma once
// Colours shared by the HTML pages and the PNG plots, so that a label or a weight looks the same in
// both: one fixed colour per head label (Paul Tol's "muted" scheme, distinguishable with the common
// colour-vision deficiencies) and the colour maps of score and attention heatmaps.

#include <string>
#include <string_view>
#include <vector>

namespace headscan {

struct Rgb {
  double r = 0, g = 0, b = 0;  // 0..1
};

// "#rrggbb"
std::string to_hex(const Rgb& colour);

// Labels in primary order (heads/registry.h), then "none".
const std::vector<std::string>& report_labels();

// The colour of a label, as its head type describes it; an unknown label gets the colour of "none".
Rgb label_colour(std::string_view label);

// A short tag for map cells ("prev", "ind", …; "" for none), so that maps read without telling
// colours apart.
std::string label_tag(const std::string& label);

// Black or white, whichever reads better on `background`.
Rgb text_colour_on(const Rgb& background);

// Score heatmaps: viridis (perceptually uniform, colour-blind safe), t in [0, 1], clamped.
Rgb viridis(double t);

// Signed scores (loss changes): blue below the middle, near-white at t = 0.5, red above; ColorBrewer
// "RdBu" reversed, readable with the common colour-vision deficiencies. t in [0, 1], clamped.
Rgb diverging(double t);

// The colour of `value` on a score's scale: viridis, or `diverging` for signed scores.
struct ScoreColumn;
using ColourMap = Rgb (*)(double);
ColourMap score_colour_map(const ScoreColumn& column);
Rgb score_colour(const ScoreColumn& column, double value);

// The pruning curves in plots/pruning.png and in its HTML figure: importance order blue, random
// order vermillion (Okabe and Ito's colour-blind safe set), each single random order paler.
struct PruningColours {
  Rgb importance_order;
  Rgb random_order;
  Rgb each_random_order;
};
const PruningColours& pruning_colours();

// `headscan compare`: the best induction score blue and the in-context-learning gap vermillion in
// the phase-change figure (Okabe and Ito), and the heads whose primary label changed highlighted
// in orange on the small multiples.
struct CompareColours {
  Rgb induction;
  Rgb in_context_gap;
  Rgb changed_fill;
  Rgb changed_frame;
};
const CompareColours& compare_colours();

// Attention weights: white (0) to dark blue (1), a sequential ramp that keeps token labels drawn on
// top of it readable. The same stops drive the JavaScript viewer.
Rgb attention_colour(double weight);
const std::vector<Rgb>& attention_stops();

}  // namespace headscan
