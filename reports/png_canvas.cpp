#include "reports/png_canvas.h"

#include <cerrno>
#include <cmath>
#include <stdexcept>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include <cairo.h>
#include <fmt/format.h>
#include <fontconfig/fontconfig.h>
#include <pango/pangocairo.h>
#include <png.h>

#include "analyzer/checked_file.h"
#include "analyzer/resources.h"
#include "reports/report_data.h"
#include "reports/text.h"

namespace headscan {

namespace {

// DejaVu first for Latin, Greek and Cyrillic; fontconfig falls back to Noto CJK and Noto Color
// Emoji for the rest.
constexpr const char* kFontFamily = "DejaVu Sans, Noto Sans CJK SC";

struct LayoutDeleter {
  void operator()(PangoLayout* layout) const { g_object_unref(layout); }
};
using Layout = std::unique_ptr<PangoLayout, LayoutDeleter>;

// The wheel's fonts (share/headscan/fonts: DejaVu Sans, resources.h), added to fontconfig's
// before the first layout; on a machine without a fontconfig configuration, its fonts.conf, so
// that fontconfig finds them without complaining. Once per process, under the static's guard:
// plots drawn in parallel wait for it.
void add_bundled_fonts() {
  static const bool added = [] {
    const std::filesystem::path fonts = installed_file("share/headscan/fonts");
    if (fonts.empty()) return false;
    std::error_code error;
    if (std::getenv("FONTCONFIG_FILE") == nullptr && !std::filesystem::exists("/etc/fonts/fonts.conf", error)) {
      setenv("FONTCONFIG_FILE", (fonts / "fonts.conf").c_str(), 0);
    }
    const auto* folder = reinterpret_cast<const FcChar8*>(fonts.c_str());
    return FcConfigAppFontAddDir(nullptr, folder) == FcTrue;
  }();
  (void)added;
}

Layout make_layout(cairo_t* cairo, const std::string& text, const TextStyle& style) {
  add_bundled_fonts();
  Layout layout(pango_cairo_create_layout(cairo));
  PangoFontDescription* font = pango_font_description_from_string(kFontFamily);
  pango_font_description_set_absolute_size(font, style.size * PANGO_SCALE);
  pango_font_description_set_weight(font, style.bold ? PANGO_WEIGHT_BOLD : PANGO_WEIGHT_NORMAL);
  pango_layout_set_font_description(layout.get(), font);
  pango_font_description_free(font);
  const std::string valid = valid_utf8(text);
  pango_layout_set_text(layout.get(), valid.c_str(), static_cast<int>(valid.size()));
  // Right-to-left text (Arabic, Hebrew) is still shaped right to left, but the layout stays
  // anchored on its left edge like every other label.
  pango_layout_set_auto_dir(layout.get(), FALSE);
  if (style.max_width > 0) {
    pango_layout_set_width(layout.get(), static_cast<int>(style.max_width * PANGO_SCALE));
    pango_layout_set_ellipsize(layout.get(), PANGO_ELLIPSIZE_END);
  }
  return layout;
}

TextSize layout_size(PangoLayout* layout) {
  PangoRectangle logical;
  pango_layout_get_extents(layout, nullptr, &logical);
  return {static_cast<double>(logical.width) / PANGO_SCALE, static_cast<double>(logical.height) / PANGO_SCALE};
}

}  // namespace

PngCanvas::PngCanvas(int width, int height)
    : width_(width), height_(height), surface_(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height)),
      cairo_(cairo_create(surface_)) {
  if (cairo_surface_status(surface_) != CAIRO_STATUS_SUCCESS) {
    cairo_destroy(cairo_);
    cairo_surface_destroy(surface_);
    throw std::runtime_error(fmt::format("cannot create a {}x{} image", width, height));
  }
  fill_rect(0, 0, width, height, {1, 1, 1});
}

PngCanvas::~PngCanvas() {
  cairo_destroy(cairo_);
  cairo_surface_destroy(surface_);
}

void PngCanvas::fill_rect(double x, double y, double w, double h, const Rgb& colour) {
  cairo_set_source_rgb(cairo_, colour.r, colour.g, colour.b);
  cairo_rectangle(cairo_, x, y, w, h);
  cairo_fill(cairo_);
}

void PngCanvas::stroke_rect(double x, double y, double w, double h, const Rgb& colour, double line_width) {
  cairo_set_source_rgb(cairo_, colour.r, colour.g, colour.b);
  cairo_set_line_width(cairo_, line_width);
  cairo_rectangle(cairo_, x, y, w, h);
  cairo_stroke(cairo_);
}

void PngCanvas::line(double x0, double y0, double x1, double y1, const Rgb& colour, double line_width) {
  cairo_set_source_rgb(cairo_, colour.r, colour.g, colour.b);
  cairo_set_line_width(cairo_, line_width);
  cairo_move_to(cairo_, x0, y0);
  cairo_line_to(cairo_, x1, y1);
  cairo_stroke(cairo_);
}

TextSize PngCanvas::measure(const std::string& text, const TextStyle& style) const {
  Layout layout = make_layout(cairo_, text, style);
  return layout_size(layout.get());
}

int PngCanvas::unknown_glyphs(const std::string& text, const TextStyle& style) const {
  Layout layout = make_layout(cairo_, text, style);
  return pango_layout_get_unknown_glyphs_count(layout.get());
}

void PngCanvas::text(const std::string& text, double x, double y, const TextStyle& style) {
  Layout layout = make_layout(cairo_, text, style);
  const TextSize size = layout_size(layout.get());
  double dx = 0;
  if (style.anchor == Anchor::center) dx = -size.width / 2;
  if (style.anchor == Anchor::right) dx = -size.width;
  double dy = 0;
  if (style.baseline == Baseline::middle) dy = -size.height / 2;
  if (style.baseline == Baseline::bottom) dy = -size.height;
  cairo_save(cairo_);
  cairo_translate(cairo_, x, y);
  cairo_rotate(cairo_, -style.angle);
  cairo_move_to(cairo_, dx, dy);
  cairo_set_source_rgb(cairo_, style.colour.r, style.colour.g, style.colour.b);
  pango_cairo_show_layout(cairo_, layout.get());
  cairo_restore(cairo_);
}

// PNG encoding was most of the time spent on plots: cairo's writer leaves libpng at zlib level 6
// with adaptive filtering. Flat-coloured plots compress nearly as well with the SUB filter at
// level 3, several times faster.
constexpr int kPngCompressionLevel = 3;

namespace {

// libpng's write callback: an error of the file (a full disk) is kept by CheckedFile, thrown by its
// close() once libpng has returned (an exception must not cross libpng's C frames).
void write_png_data(png_structp png, png_bytep data, std::size_t size) {
  if (!static_cast<CheckedFile*>(png_get_io_ptr(png))->try_write(data, size)) png_error(png, "write error");
}

void flush_png_data(png_structp) {}  // CheckedFile::close() flushes

// libpng's errors end in save()'s longjmp, which throws: its default handlers would also print
// "libpng error: …" to the terminal.
void png_failed(png_structp png, png_const_charp) { png_longjmp(png, 1); }
void png_warned(png_structp, png_const_charp) {}

}  // namespace

void PngCanvas::save(const std::filesystem::path& path) const {
  cairo_surface_flush(surface_);
  CheckedFile file(path);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, png_failed, png_warned);
  png_infop info = png != nullptr ? png_create_info_struct(png) : nullptr;
  if (png == nullptr || info == nullptr) {
    png_destroy_write_struct(&png, &info);
    throw std::runtime_error(fmt::format("{}: cannot write PNG (out of memory)", path.string()));
  }
  // RGB24 surfaces hold one native-endian 0x00RRGGBB word per pixel.
  const unsigned char* data = cairo_image_surface_get_data(surface_);
  const int stride = cairo_image_surface_get_stride(surface_);
  std::vector<png_byte> row(static_cast<std::size_t>(width_) * 3);
  if (setjmp(png_jmpbuf(png))) {  // libpng reports errors by longjmp
    png_destroy_write_struct(&png, &info);
    file.close();  // throws the file's error
    throw std::runtime_error(fmt::format("{}: cannot write PNG (libpng error)", path.string()));
  }
  png_set_write_fn(png, &file, write_png_data, flush_png_data);
  png_set_compression_level(png, kPngCompressionLevel);
  png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width_), static_cast<png_uint_32>(height_), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_BASE, PNG_FILTER_TYPE_BASE);
  png_write_info(png, info);
  for (int y = 0; y < height_; ++y) {
    const unsigned char* pixels = data + static_cast<std::ptrdiff_t>(y) * stride;
    for (int x = 0; x < width_; ++x) {
      std::uint32_t pixel;
      std::memcpy(&pixel, pixels + 4 * x, sizeof pixel);
      row[3 * x] = static_cast<png_byte>(pixel >> 16);
      row[3 * x + 1] = static_cast<png_byte>(pixel >> 8);
      row[3 * x + 2] = static_cast<png_byte>(pixel);
    }
    png_write_row(png, row.data());
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  file.close();
}

void draw_colour_bar(PngCanvas& canvas, double x, double y, double width, double height, double low, double high,
                     Rgb (*colour)(double), const std::string& title, const double* marker) {
  const int steps = static_cast<int>(std::ceil(width));
  for (int i = 0; i < steps; ++i) {
    canvas.fill_rect(x + i, y, 1.5, height, colour((i + 0.5) / steps));
  }
  canvas.stroke_rect(x, y, width, height, {0.4, 0.4, 0.4});
  TextStyle label;
  label.size = 11;
  label.colour = {0.2, 0.2, 0.2};
  const int ticks = 5;
  for (int i = 0; i < ticks; ++i) {
    const double t = static_cast<double>(i) / (ticks - 1);
    const double tx = x + t * width;
    canvas.line(tx, y + height, tx, y + height + 4, {0.3, 0.3, 0.3});
    label.anchor = Anchor::center;
    const double value = low + t * (high - low);
    canvas.text(format_number(value, std::abs(high - low) >= 10 ? 0 : 2), tx, y + height + 5, label);
  }
  if (marker && *marker >= low && *marker <= high && high > low) {
    const double mx = x + (*marker - low) / (high - low) * width;
    canvas.line(mx, y - 4, mx, y + height + 4, {0.85, 0.1, 0.1}, 2);
    TextStyle note = label;
    note.anchor = Anchor::center;
    note.baseline = Baseline::bottom;
    note.colour = {0.7, 0.05, 0.05};
    canvas.text("threshold " + format_number(*marker), mx, y - 4, note);
  }
  TextStyle heading = label;
  heading.anchor = Anchor::right;
  heading.baseline = Baseline::middle;
  heading.size = 12;
  canvas.text(title, x - 8, y + height / 2, heading);
}

}  // namespace headscan
