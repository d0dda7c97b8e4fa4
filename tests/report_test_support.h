#pragma once
// What the report tests share (tests/test_reports.cpp, tests/test_reports_causal.cpp): a temporary
// folder, reading files, counting and cutting markup, and decoding PNGs to check they are drawn.
#include <cairo.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace headscan::testing {

namespace fs = std::filesystem;


struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) : path(fs::temp_directory_path() / ("headscan-test-reports-" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::uintmax_t directory_size(const fs::path& path) {
  std::uintmax_t total = 0;
  for (const auto& entry : fs::recursive_directory_iterator(path)) {
    if (entry.is_regular_file()) total += entry.file_size();
  }
  return total;
}

inline std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

struct Png {
  int width = 0;
  int height = 0;
  double luminance_variance = 0;
  std::size_t colours = 0;  // distinct colours, up to 1000
};

inline Png decode_png(const fs::path& path) {
  cairo_surface_t* surface = cairo_image_surface_create_from_png(path.c_str());
  REQUIRE(cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS);
  Png png;
  png.width = cairo_image_surface_get_width(surface);
  png.height = cairo_image_surface_get_height(surface);
  const int stride = cairo_image_surface_get_stride(surface);
  const unsigned char* pixels = cairo_image_surface_get_data(surface);
  double sum = 0, squares = 0;
  std::vector<std::uint32_t> seen;
  for (int y = 0; y < png.height; ++y) {
    const auto* row = reinterpret_cast<const std::uint32_t*>(pixels + static_cast<std::ptrdiff_t>(y) * stride);
    for (int x = 0; x < png.width; ++x) {
      const std::uint32_t pixel = row[x] & 0xFFFFFF;
      const double luminance = 0.2126 * ((pixel >> 16) & 255) + 0.7152 * ((pixel >> 8) & 255) + 0.0722 * (pixel & 255);
      sum += luminance;
      squares += luminance * luminance;
      if (seen.size() < 1000 && std::find(seen.begin(), seen.end(), pixel) == seen.end()) seen.push_back(pixel);
    }
  }
  const double n = static_cast<double>(png.width) * png.height;
  png.luminance_variance = squares / n - (sum / n) * (sum / n);
  png.colours = seen.size();
  cairo_surface_destroy(surface);
  return png;
}

// Pixels of exactly `hex` ("#rrggbb") in a PNG.
inline std::size_t pixels_of(const fs::path& path, const std::string& hex) {
  cairo_surface_t* surface = cairo_image_surface_create_from_png(path.c_str());
  REQUIRE(cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS);
  const std::uint32_t wanted = static_cast<std::uint32_t>(std::stoul(hex.substr(1), nullptr, 16));
  const int width = cairo_image_surface_get_width(surface), height = cairo_image_surface_get_height(surface);
  const int stride = cairo_image_surface_get_stride(surface);
  const unsigned char* pixels = cairo_image_surface_get_data(surface);
  std::size_t found = 0;
  for (int y = 0; y < height; ++y) {
    const auto* row = reinterpret_cast<const std::uint32_t*>(pixels + static_cast<std::ptrdiff_t>(y) * stride);
    for (int x = 0; x < width; ++x) found += (row[x] & 0xFFFFFF) == wanted;
  }
  cairo_surface_destroy(surface);
  return found;
}

// The text from `start` to the next `end` after it, or "" when `start` is not in `text`.
inline std::string between(const std::string& text, const std::string& start, const std::string& end) {
  const auto from = text.find(start);
  if (from == std::string::npos) return "";
  const auto to = text.find(end, from);
  return text.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

inline void require_drawn(const Png& png) {
  CHECK(png.luminance_variance > 100);  // not one flat colour
  CHECK(png.colours > 8);
}

struct Fixture {
  std::vector<ExampleSequence> examples;
  std::vector<ExampleSequence> probes;
  nlohmann::ordered_json heads;
  Fixture(int layers, int heads_per_layer, FixtureText text, std::size_t count, std::size_t length, long corpus_tokens = 12345,
          FixtureAblation ablation = FixtureAblation::none)
      : examples(fixture_examples(layers, heads_per_layer, fixture_token_lists(text, count, length))),
        probes(fixture_probes(layers, heads_per_layer, 12, 2)),
        heads(fixture_heads_json(layers, heads_per_layer, examples, probes, text, corpus_tokens, ablation)) {}
};


}  // namespace headscan::testing
