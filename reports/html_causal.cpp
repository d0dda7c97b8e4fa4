// The causal evidence of --ablation in index.html and on the heads' pages.
#include "reports/html_causal.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/palette.h"
#include "reports/plots.h"
#include "reports/text.h"

namespace headscan {

namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kMichel =
    "Michel, Levy and Neubig 2019, “Are Sixteen Heads Really Better than One?”";
constexpr const char* kOlsson = "Olsson et al. 2022, “In-context Learning and Induction Heads”";

// The causal scores the head map can be coloured by, with the switch's name for them.
std::vector<std::pair<const ScoreColumn*, const char*>> map_scores(const ReportData& data) {
  std::vector<std::pair<const ScoreColumn*, const char*>> scores;
  if (const ScoreColumn* importance = data.score("importance")) scores.emplace_back(importance, "importance");
  if (const ScoreColumn* effect = data.score("ablation_loss")) scores.emplace_back(effect, "ablation effect");
  return scores;
}

// Three significant digits, at least two decimals: 3.21, 0.123, 0.000412.
std::string significant(std::optional<double> value) {
  if (!value) return "—";
  const double magnitude = std::abs(*value);
  const int digits = magnitude > 0 ? std::clamp(2 - static_cast<int>(std::floor(std::log10(magnitude))), 2, 6) : 2;
  return format_number(*value, digits);
}

// A loss change with its sign: "+0.041", "−0.003".
std::string signed_nats(std::optional<double> value) {
  if (!value) return "—";
  std::string text = significant(value);
  if (*value > 0) text.insert(0, "+");
  return text;
}

std::string gradient(ColourMap colour) {
  std::string css = "linear-gradient(to right";
  for (int i = 0; i <= 8; ++i) css += "," + to_hex(colour(i / 8.0));
  return css + ")";
}

std::string head_link(const ReportData& data, const HeadLink& link, const std::string& prefix) {
  const HeadInfo& info = data.at(link.layer, link.head);
  std::string labels;
  for (const auto& label : info.labels) labels += label_badge(label);
  if (info.labels.empty()) labels = label_badge("none");
  return fmt::format("<td><a href=\"{0}{1}.html\">{1}</a></td><td>{2}</td>", prefix, info.id(), labels);
}

// "induction" for "induction", "duplicate-token" for "duplicate_token".
std::string score_words(const std::string& score) {
  std::string words = score.empty() ? std::string("probe") : score;
  std::replace(words.begin(), words.end(), '_', '-');
  return words;
}

std::string run_description(const AblationSummary& ablation) {
  std::string text = "on ";
  text += ablation.sequences ? fmt::format("{} sequence{}", *ablation.sequences, *ablation.sequences == 1 ? "" : "s")
                             : std::string("the first sequences");
  text += " of the corpus";
  if (!ablation.objective.empty()) text += ", " + escape_html(ablation.objective) + " loss";
  if (ablation.loss) text += fmt::format(" {} nats with every head", significant(ablation.loss));
  return text;
}

std::string ablation_table(const Json& ablation) {
  static const std::vector<std::pair<const char*, const char*>> known = {
      {"sequences", "sequences"},         {"requested_sequences", "sequences asked for"},
      {"objective", "loss"},              {"mask_token", "mask token"},
      {"mask_rate", "share of tokens masked"}, {"predictions", "predictions scored"},
      {"loss", "mean loss with every head (nats)"}, {"seed", "seed"}};
  std::string html = "<table class=\"kv\">";
  const auto row = [&](const std::string& title, const Json& value) {
    html += fmt::format("<tr><th>{}</th><td>{}</td></tr>", escape_html(title), json_value_html(value));
  };
  for (const auto& [key, title] : known) {
    if (ablation.contains(key)) row(title, ablation[key]);
  }
  for (const auto& [key, value] : ablation.items()) {
    const bool listed = std::any_of(known.begin(), known.end(), [&](const auto& k) { return key == k.first; });
    if (!listed && key != "pruning") row(key, value);
  }
  const Json pruning = ablation.value("pruning", Json::object());
  if (pruning.is_object()) {
    if (pruning.contains("step")) row("pruning step (share of heads)", pruning["step"]);
    if (pruning.contains("random_orders")) row("random orders", pruning["random_orders"]);
  }
  return html + "</table>";
}

}  // namespace

std::string map_colour_switch(const ReportData& data) {
  const auto scores = map_scores(data);
  if (scores.empty()) return "";
  std::string html = "<div class=\"mapcolour\" role=\"radiogroup\" aria-label=\"colour the head map by\">colour by "
                     "<label><input type=\"radio\" name=\"map-colour\" value=\"label\" checked> primary label</label>";
  for (const auto& [column, title] : scores) {
    html += fmt::format("<label><input type=\"radio\" name=\"map-colour\" value=\"{}\"> {}</label>", escape_html(column->name),
                        escape_html(title));
  }
  return html + "</div>";
}

std::string map_cell_colours(const ReportData& data, const HeadInfo& info) {
  const auto scores = map_scores(data);
  if (scores.empty()) return "";
  const Rgb label = label_colour(info.primary);
  std::string attributes = fmt::format(" data-fill-label=\"{}\" data-ink-label=\"{}\"", to_hex(label), to_hex(text_colour_on(label)));
  const std::size_t index = static_cast<std::size_t>(info.layer * data.heads + info.head);
  for (const auto& [column, title] : scores) {
    const auto& value = column->values[index];
    const Rgb fill = value ? score_colour(*column, *value) : Rgb{0.93, 0.93, 0.93};
    attributes += fmt::format(" data-fill-{0}=\"{1}\" data-ink-{0}=\"{2}\"", escape_html(column->name), to_hex(fill),
                              to_hex(value ? text_colour_on(fill) : Rgb{0.4, 0.4, 0.4}));
  }
  return attributes;
}

std::string map_colour_legends(const ReportData& data) {
  std::string html;
  for (const auto& [column, title] : map_scores(data)) {
    html += fmt::format("<div class=\"scale mapscale\" data-map-legend=\"{}\" hidden><strong>{}</strong> {}"
                        "<span class=\"bar\" style=\"background:{}\"></span>{} · {}</div>",
                        escape_html(column->name), escape_html(title), format_number(column->low),
                        gradient(score_colour_map(*column)), format_number(column->high), escape_html(column->meaning));
  }
  return html;
}

std::string pruning_svg(const AblationSummary& ablation) {
  const auto range = ablation.loss_range();
  if (!range) return "";
  const ValueAxis axis = round_value_axis(range->first, range->second, 5);
  const double left = 70, top = 44, width = 620, height = 276;
  const auto x = [&](double fraction) { return left + std::clamp(fraction, 0.0, 1.0) * width; };
  const auto y = [&](double loss) { return top + height - (loss - axis.low) / (axis.high - axis.low) * height; };
  const PruningColours& colours = pruning_colours();

  std::string svg = fmt::format(
      "<svg class=\"pruning\" viewBox=\"0 16 720 368\" role=\"img\" aria-label=\"mean loss against the share of heads "
      "removed, in importance order and in random order\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"12\">");
  for (double value = axis.low; value <= axis.high + axis.step / 2; value += axis.step) {
    svg += fmt::format("<line x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#e6e6e6\"/>"
                       "<text x=\"{3:.1f}\" y=\"{2:.1f}\" text-anchor=\"end\" dominant-baseline=\"middle\" fill=\"#444\">{4}</text>",
                       left, left + width, y(value), left - 7, format_number(value, axis.digits));
  }
  for (int percent = 0; percent <= 100; percent += 10) {
    svg += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\" stroke=\"#444\"/>", x(percent / 100.0),
                       top + height, top + height + 4);
    if (percent % 20 == 0) {
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#444\">{} %</text>", x(percent / 100.0),
                         top + height + 18, percent);
    }
  }
  svg += fmt::format("<path d=\"M{0:.1f} {1:.1f}V{2:.1f}H{3:.1f}\" fill=\"none\" stroke=\"#444\"/>", left, top, top + height,
                     left + width);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#333\">share of heads removed</text>",
                     left + width / 2, top + height + 40);
  svg += fmt::format("<text transform=\"translate(18 {:.1f}) rotate(-90)\" text-anchor=\"middle\" fill=\"#333\">mean loss (nats)</text>",
                     top + height / 2);

  const auto polyline = [&](const std::vector<std::pair<double, double>>& points, const Rgb& colour, double stroke,
                            const char* css) {
    std::string coordinates;
    for (const auto& [fraction, loss] : points) coordinates += fmt::format("{:.1f},{:.1f} ", x(fraction), y(loss));
    if (!coordinates.empty()) coordinates.pop_back();
    return fmt::format("<polyline class=\"{}\" points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" "
                       "stroke-linejoin=\"round\"/>", css, coordinates, to_hex(colour), stroke);
  };
  for (std::size_t order = 0; order < ablation.random_orders; ++order) {
    std::vector<std::pair<double, double>> points;
    for (const auto& point : ablation.pruning) {
      if (order < point.random_orders.size()) points.emplace_back(point.fraction, point.random_orders[order]);
    }
    svg += polyline(points, colours.each_random_order, 1, "each-random");
  }
  // The mean of the random orders, then the importance order on top, each point with its reading.
  for (const bool by_importance : {false, true}) {
    std::vector<std::pair<double, double>> points;
    std::string markers;
    const Rgb colour = by_importance ? colours.importance_order : colours.random_order;
    for (const auto& point : ablation.pruning) {
      const auto& loss = by_importance ? point.importance_order : point.random_order;
      if (!loss) continue;
      points.emplace_back(point.fraction, *loss);
      const std::string removed = point.removed ? fmt::format(" ({} heads)", *point.removed) : std::string();
      const std::string reading = fmt::format("{} order: {} % removed{}, loss {} nats", by_importance ? "importance" : "random",
                                              format_number(point.fraction * 100, 0), removed, significant(loss));
      // Circles and squares, so that the orders differ without colour too.
      if (by_importance) {
        markers += fmt::format("<circle class=\"point importance\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\">"
                               "<title>{}</title></circle>",
                               x(point.fraction), y(*loss), to_hex(colour), reading);
      } else {
        markers += fmt::format("<rect class=\"point random\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"7\" height=\"7\" "
                               "fill=\"{}\"><title>{}</title></rect>",
                               x(point.fraction) - 3.5, y(*loss) - 3.5, to_hex(colour), reading);
      }
    }
    svg += polyline(points, colour, by_importance ? 2.5 : 2, by_importance ? "importance" : "random") + markers;
  }

  // Legend in the frame's top left corner, which pruning curves leave empty: the loss is lowest
  // with every head.
  double legend_y = top + 14;
  std::string legend;
  const auto entry = [&](const Rgb& colour, double stroke, const std::string& text) {
    legend += fmt::format("<line x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\" stroke-width=\"{4}\"/>"
                          "<text x=\"{5:.1f}\" y=\"{2:.1f}\" dominant-baseline=\"middle\" fill=\"#222\">{6}</text>",
                          left + 16, left + 42, legend_y, to_hex(colour), stroke, left + 48, escape_html(text));
    legend_y += 20;
  };
  entry(colours.importance_order, 2.5, "importance order (least important first)");
  if (ablation.random_orders > 1) {
    entry(colours.random_order, 2, fmt::format("random order, mean of {}", ablation.random_orders));
    entry(colours.each_random_order, 1, "each random order");
  } else {
    entry(colours.random_order, 2, "random order");
  }
  svg += fmt::format("<rect class=\"legend\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"300\" height=\"{:.1f}\" fill=\"#fff\" "
                     "fill-opacity=\"0.85\" stroke=\"#ddd\"/>",
                     left + 8, top + 2, legend_y - top - 4);
  return svg + legend + "</svg>";
}

std::string causal_index_section(const ReportData& data, const ReportContents& contents) {
  if (!data.ablation) return "";
  const AblationSummary& ablation = *data.ablation;
  std::string html = "<section id=\"causal\"><h2>Causal evidence</h2><p class=\"note\">Heads removed (their attention "
                     "scaled by ξ = 0, so that they add nothing) " +
                     run_description(ablation) +
                     ". Each head's importance and the loss change when it alone is removed are in the table, the score "
                     "maps and on its page; the head map can be coloured by them (" + escape_html(kMichel) + ").</p>";
  html += "<h3>Pruning</h3><p class=\"note\">Mean loss as more and more heads are removed together: in order of "
          "importance (least important first) and in random orders. Where the importance curve stays below the random "
          "ones, importance tells the heads the model can do without (Michel et al. 2019, §4.2). Hover a point for its "
          "value.</p>";
  const std::string svg = pruning_svg(ablation);
  html += "<div class=\"causal-row\">";
  if (svg.empty()) {
    html += "<p class=\"note\">heads.json has no pruning points.</p>";
  } else {
    html += "<figure class=\"pruning\">" + svg;
    if (contents.pruning_plot) html += "<figcaption>As PNG: <a href=\"plots/pruning.png\">plots/pruning.png</a></figcaption>";
    html += "</figure>";
  }
  html += "<div class=\"card\"><h3>Ablation run</h3>" + ablation_table(*ablation.json) + "</div></div>";
  return html + "</section>\n";
}

std::string causal_head_section(const ReportData& data, const HeadInfo& info) {
  const ScoreColumn* importance = data.score("importance");
  const ScoreColumn* normalized = data.score("importance_layer_normalized");
  const ScoreColumn* effect = data.score("ablation_loss");
  const ScoreColumn* repeat = data.score("ablation_repeat_loss");
  if (!data.ablation && !importance && !effect && !info.circuit && info.depended_on_by.empty()) return "";
  const std::size_t index = static_cast<std::size_t>(info.layer * data.heads + info.head);

  std::string html = "<section id=\"causal\"><h2>Causal evidence</h2>";
  if (data.ablation) {
    html += "<p class=\"note\">What removing heads (scaling their attention by ξ = 0) does to the model, " +
            run_description(*data.ablation) + ".</p>";
  }
  const auto rank = [&](const ScoreColumn* column, const char* reading) -> std::string {
    const auto place = column->rank(index);
    if (!place) return "";
    return fmt::format("{} of {} <span class=\"note\">({})</span>", *place, column->count(), reading);
  };
  std::string rows;
  if (importance) {
    rows += fmt::format("<tr id=\"causal-importance\"><td>importance</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                        "<td>how fast the loss moves as the head is scaled: mean |∂L/∂ξ| in nats per unit of ξ</td></tr>",
                        significant(importance->values[index]), rank(importance, "1 = most important"));
  }
  if (normalized && normalized->values[index]) {
    // Its rank among the heads of its layer: the normalization makes layers comparable, not heads.
    std::size_t above = 0, in_layer = 0;
    for (int head = 0; head < data.heads; ++head) {
      const auto& other = normalized->values[static_cast<std::size_t>(info.layer * data.heads + head)];
      if (!other) continue;
      ++in_layer;
      above += *other > *normalized->values[index];
    }
    rows += fmt::format("<tr id=\"causal-importance-normalized\"><td>importance in its layer</td><td class=\"num\">{}</td>"
                        "<td class=\"num\">{} of {} <span class=\"note\">(in layer {})</span></td>"
                        "<td>importance divided by the ℓ2 norm of its layer's importances (§4.1)</td></tr>",
                        significant(normalized->values[index]), above + 1, in_layer, info.model_layer);
  }
  if (effect) {
    rows += fmt::format("<tr id=\"causal-ablation\"><td>ablation effect</td><td class=\"num\">{} nats</td><td class=\"num\">{}</td>"
                        "<td>mean loss increase when this head alone is removed; below 0 the model does better without it</td></tr>",
                        signed_nats(effect->values[index]), rank(effect, "1 = largest increase"));
  }
  if (repeat && repeat->values[index]) {
    rows += fmt::format("<tr id=\"causal-repeat\"><td>repeat loss effect</td><td class=\"num\">{} nats</td><td class=\"num\">{}</td>"
                        "<td>loss increase on repeats 2–4 of the induction probes when this head is removed: how much "
                        "in-context copying needs it</td></tr>",
                        signed_nats(repeat->values[index]), rank(repeat, "1 = largest increase"));
  }
  if (!rows.empty()) {
    html += "<div class=\"table-wrap\" style=\"max-height:none\"><table class=\"data\"><thead><tr><th>measure</th>"
            "<th>value</th><th>rank</th><th>what it means</th></tr></thead><tbody>" + rows + "</tbody></table></div>";
    html += "<p class=\"note\">Importance and single-head ablation: " + escape_html(kMichel) + ".</p>";
  }

  if (info.circuit) {
    const std::string score = score_words(info.circuit->score);
    const std::string composition = info.circuit->score == "induction"
                                        ? "An induction head reads what a previous-token head of an earlier layer wrote "
                                          "(K-composition, " + std::string(kOlsson) + ")."
                                        : "Heads compose through what earlier layers write (" + std::string(kOlsson) + ").";
    html += fmt::format("<h3>Depends on</h3><div id=\"depends-on\"><p class=\"note\">Earlier-layer heads whose removal "
                        "lowers this head's {} score (<strong>{}</strong> with every head; probe scores are shares of "
                        "attention), largest drop first. {}</p>",
                        escape_html(score), significant(info.circuit->baseline), escape_html(composition));
    if (info.circuit->depends_on.empty()) {
      html += fmt::format("<p>No earlier-layer head lowers its {} score when removed.</p>", escape_html(score));
    } else {
      html += fmt::format("<table class=\"data compact\"><thead><tr><th>head</th><th>labels</th><th>drop of the {} score</th>"
                          "</tr></thead><tbody>", escape_html(score));
      for (const auto& link : info.circuit->depends_on) {
        html += "<tr>" + head_link(data, link, "") + fmt::format("<td class=\"num\">{}</td></tr>", format_number(link.drop, 3));
      }
      html += "</tbody></table>";
    }
    html += "</div>";
  }
  if (!info.depended_on_by.empty()) {
    html += "<h3>Depended on by</h3><div id=\"depended-on-by\"><p class=\"note\">Induction and duplicate-token heads "
            "of later layers whose probe score drops when this head is removed (" + escape_html(kOlsson) + ").</p>"
            "<table class=\"data compact\"><thead><tr><th>head</th><th>labels</th><th>score</th><th>drop</th></tr></thead><tbody>";
    for (const auto& link : info.depended_on_by) {
      const HeadInfo& dependent = data.at(link.layer, link.head);
      const std::string score = dependent.circuit ? score_words(dependent.circuit->score) : std::string("probe");
      html += "<tr>" + head_link(data, link, "") +
              fmt::format("<td>{}</td><td class=\"num\">{}</td></tr>", escape_html(score), format_number(link.drop, 3));
    }
    html += "</tbody></table></div>";
  }
  if (!info.circuit && info.depended_on_by.empty() && data.ablation) {
    html += "<p class=\"note\">Circuits are traced for induction and duplicate-token heads: this head is not one, and "
            "none of them depends on it.</p>";
  }
  return html + "</section>\n";
}

}  // namespace headscan
