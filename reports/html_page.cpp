#include "reports/html_page.h"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/html_assets.h"
#include "reports/palette.h"
#include "reports/text.h"

namespace headscan {

namespace {

// No request can leave the file system: scripts, images and styles only from the page's own
// location (file:) or inline, nothing else at all.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'";

}  // namespace

std::string page_start(const std::string& title) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n"
      "<meta name=\"referrer\" content=\"no-referrer\">\n"
      "<meta name=\"generator\" content=\"headscan\">\n"
      "<title>{}</title>\n<style>{}</style>\n<script data-headscan=\"early\">{}</script>\n</head>\n<body>\n",
      kContentSecurityPolicy, escape_html(title), report_stylesheet(), report_early_script());
}

std::string page_end(const nlohmann::ordered_json& config, const char* script) {
  return fmt::format(
      "<div id=\"tooltip\" role=\"tooltip\"></div>\n"
      "<script type=\"application/json\" id=\"headscan-config\" data-headscan=\"config\">{}</script>\n"
      "<script data-headscan=\"main\">(function () {{\n'use strict';\n{}}})();</script>\n</body>\n</html>\n",
      json_for_script(config), script ? script : report_script());
}

std::string label_badge(const std::string& label) {
  const Rgb background = label_colour(label);
  return fmt::format("<span class=\"badge\" style=\"background:{};color:{}\">{}</span>", to_hex(background),
                     to_hex(text_colour_on(background)), escape_html(label));
}

std::string label_legend(const std::vector<std::string>& labels) {
  std::string html = "<div class=\"legend\">";
  for (const auto& label : labels) {
    html += fmt::format("<span><span class=\"swatch\" style=\"background:{}\"></span>{}</span>", to_hex(label_colour(label)),
                        escape_html(label));
  }
  return html + "</div>\n";
}

nlohmann::ordered_json head_summary(const ReportData& data, const HeadInfo& info) {
  nlohmann::ordered_json scores = nlohmann::ordered_json::array();
  if (info.scores) {
    // Columns first (fixed order), then whatever else the head carries.
    for (const auto& column : data.scores) {
      if (info.scores->contains(column.name)) scores.push_back({column.name, score_text(&(*info.scores)[column.name])});
    }
    for (const auto& [name, value] : info.scores->items()) {
      if (!data.score(name)) scores.push_back({valid_utf8(name), score_text(&value)});
    }
  }
  nlohmann::ordered_json labels = nlohmann::ordered_json::array();
  for (const auto& label : info.labels) labels.push_back(valid_utf8(label));
  return {{"id", info.id()}, {"labels", labels}, {"scores", scores}};
}

nlohmann::ordered_json attention_stop_list() {
  nlohmann::ordered_json stops = nlohmann::ordered_json::array();
  for (const auto& stop : attention_stops()) stops.push_back(to_hex(stop));
  return stops;
}

std::string json_value_html(const nlohmann::ordered_json& value) {
  if (value.is_null()) return "—";
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  if (value.is_number_integer() || value.is_number_unsigned()) return value.dump();
  if (value.is_number_float()) {
    const double number = value.get<double>();
    if (std::isfinite(number) && number == std::round(number) && std::abs(number) < 1e15) return fmt::format("{:.0f}", number);
    std::string text = format_number(number, std::abs(number) >= 100 ? 1 : 4);
    while (text.find('.') != std::string::npos && (text.back() == '0' || text.back() == '.')) {
      const bool dot = text.back() == '.';
      text.pop_back();
      if (dot) break;
    }
    return text;
  }
  if (value.is_string()) return escape_html(value.get<std::string>());
  // [4.159, 4.164] as "4.159, 4.164"; {"a": 1} as "a: 1".
  std::string text;
  for (auto item = value.begin(); item != value.end(); ++item) {
    if (!text.empty()) text += ", ";
    if (value.is_object()) text += escape_html(item.key()) + ": ";
    text += json_value_html(*item);
  }
  return text.empty() ? "—" : text;
}

}  // namespace headscan
