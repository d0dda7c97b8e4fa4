#pragma once
// A white RGB image drawn with cairo, text laid out with pango so that any script renders (CJK,
// Cyrillic, emoji through fontconfig's fallback to Noto and DejaVu), saved as PNG.

#include <filesystem>
#include <memory>
#include <string>

#include "reports/palette.h"

typedef struct _cairo cairo_t;
typedef struct _cairo_surface cairo_surface_t;

namespace headscan {

enum class Anchor { left, center, right };        // horizontal, relative to x
enum class Baseline { top, middle, bottom };      // vertical, relative to y

struct TextStyle {
  double size = 12;  // pixels
  bool bold = false;
  Rgb colour{0, 0, 0};
  Anchor anchor = Anchor::left;
  Baseline baseline = Baseline::top;
  double max_width = 0;  // > 0: ellipsized to this width
  double angle = 0;      // radians, counter-clockwise, around (x, y)
};

struct TextSize {
  double width = 0;
  double height = 0;
};

class PngCanvas {
 public:
  PngCanvas(int width, int height);
  ~PngCanvas();
  PngCanvas(const PngCanvas&) = delete;
  PngCanvas& operator=(const PngCanvas&) = delete;

  int width() const { return width_; }
  int height() const { return height_; }
  cairo_t* cairo() const { return cairo_; }

  void fill_rect(double x, double y, double w, double h, const Rgb& colour);
  void stroke_rect(double x, double y, double w, double h, const Rgb& colour, double line_width = 1);
  void line(double x0, double y0, double x1, double y1, const Rgb& colour, double line_width = 1);

  TextSize measure(const std::string& text, const TextStyle& style) const;
  // Characters of `text` that no installed font can draw (they would show as boxes).
  int unknown_glyphs(const std::string& text, const TextStyle& style) const;
  void text(const std::string& text, double x, double y, const TextStyle& style);

  // Throws std::runtime_error naming the file when it cannot be written.
  void save(const std::filesystem::path& path) const;

 private:
  int width_;
  int height_;
  cairo_surface_t* surface_;
  cairo_t* cairo_;
};

// A horizontal colour bar from `low` to `high` with end labels, `ticks` evenly spaced, and an
// optional marker (e.g. a threshold).
void draw_colour_bar(PngCanvas& canvas, double x, double y, double width, double height, double low, double high,
                     Rgb (*colour)(double), const std::string& title, const double* marker = nullptr);

}  // namespace headscan
