#include "reports/palette.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>

#include "heads/registry.h"
#include "reports/report_data.h"

namespace headscan {

namespace {

Rgb from_hex(unsigned value) {
  return {((value >> 16) & 0xff) / 255.0, ((value >> 8) & 0xff) / 255.0, (value & 0xff) / 255.0};
}

// Piecewise-linear interpolation over equally spaced stops.
Rgb interpolate(const std::vector<Rgb>& stops, double t) {
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0);
  const double position = t * static_cast<double>(stops.size() - 1);
  const std::size_t index = std::min(static_cast<std::size_t>(position), stops.size() - 2);
  const double f = position - static_cast<double>(index);
  const Rgb& a = stops[index];
  const Rgb& b = stops[index + 1];
  return {a.r + (b.r - a.r) * f, a.g + (b.g - a.g) * f, a.b + (b.b - a.b) * f};
}

}  // namespace

std::string to_hex(const Rgb& colour) {
  auto channel = [](double v) { return static_cast<unsigned>(std::lround(std::clamp(v, 0.0, 1.0) * 255)); };
  char text[8];
  std::snprintf(text, sizeof text, "#%02x%02x%02x", channel(colour.r), channel(colour.g), channel(colour.b));
  return text;
}

const std::vector<std::string>& report_labels() {
  static const std::vector<std::string> labels = [] {
    std::vector<std::string> all = primary_label_order();
    all.emplace_back("none");
    return all;
  }();
  return labels;
}

namespace {

const HeadType* labelled_type(std::string_view label) {
  for (const HeadType& type : head_types()) {
    if (!type.label.empty() && type.label == label) return &type;
  }
  return nullptr;
}

}  // namespace

Rgb label_colour(std::string_view label) {
  // Heads without a label are pale grey; each head type brings its label's colour.
  const HeadType* type = labelled_type(label);
  if (type == nullptr || type->colour.size() != 7) return from_hex(0xDDDDDD);
  return from_hex(static_cast<unsigned>(std::stoul(type->colour.substr(1), nullptr, 16)));
}

std::string label_tag(const std::string& label) {
  if (label == "none") return "";
  const HeadType* type = labelled_type(label);
  return type != nullptr ? type->tag : label.substr(0, 5);
}

Rgb text_colour_on(const Rgb& background) {
  // Relative luminance (WCAG 2.1) of sRGB.
  auto linear = [](double c) { return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); };
  const double luminance = 0.2126 * linear(background.r) + 0.7152 * linear(background.g) + 0.0722 * linear(background.b);
  return luminance > 0.18 ? Rgb{0, 0, 0} : Rgb{1, 1, 1};
}

Rgb viridis(double t) {
  // matplotlib's viridis sampled at 9 points.
  static const std::vector<Rgb> stops = {from_hex(0x440154), from_hex(0x472D7B), from_hex(0x3B528B),
                                         from_hex(0x2C728E), from_hex(0x21918C), from_hex(0x28AE80),
                                         from_hex(0x5EC962), from_hex(0xADDC30), from_hex(0xFDE725)};
  return interpolate(stops, t);
}

Rgb diverging(double t) {
  static const std::vector<Rgb> stops = {from_hex(0x2166AC), from_hex(0x4393C3), from_hex(0x92C5DE),
                                         from_hex(0xD1E5F0), from_hex(0xF7F7F7), from_hex(0xFDDBC7),
                                         from_hex(0xF4A582), from_hex(0xD6604D), from_hex(0xB2182B)};
  return interpolate(stops, t);
}

ColourMap score_colour_map(const ScoreColumn& column) { return column.diverging ? diverging : viridis; }

Rgb score_colour(const ScoreColumn& column, double value) {
  const double span = column.high - column.low;
  return score_colour_map(column)(span > 0 ? (value - column.low) / span : 0);
}

const PruningColours& pruning_colours() {
  static const PruningColours colours = {from_hex(0x0072B2), from_hex(0xD55E00), from_hex(0xF2BFA0)};
  return colours;
}

const CompareColours& compare_colours() {
  static const CompareColours colours = {from_hex(0x0072B2), from_hex(0xD55E00), from_hex(0xFFF1DC), from_hex(0xE69F00)};
  return colours;
}

const std::vector<Rgb>& attention_stops() {
  // ColorBrewer "Blues", from white.
  static const std::vector<Rgb> stops = {from_hex(0xFFFFFF), from_hex(0xDEEBF7), from_hex(0xC6DBEF),
                                         from_hex(0x9ECAE1), from_hex(0x6BAED6), from_hex(0x4292C6),
                                         from_hex(0x2171B5), from_hex(0x08519C), from_hex(0x08306B)};
  return stops;
}

Rgb attention_colour(double weight) { return interpolate(attention_stops(), weight); }

}  // namespace headscan
