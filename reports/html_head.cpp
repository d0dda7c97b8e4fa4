// heads/L{l}H{h}.html: one page per head with the evidence behind its labels.
#include <algorithm>
#include <map>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/html.h"
#include "reports/html_causal.h"
#include "reports/html_long_context.h"
#include "reports/plots.h"
#include "reports/text.h"

namespace headscan {

namespace {

using Json = nlohmann::ordered_json;

// The score a label is decided by (DESIGN.md, "Head scores and labels").
std::string score_of_label(const std::string& label) {
  if (label == "broad") return "entropy";
  std::string name = label;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// "3 of 144" by descending value, or "".
std::string rank_text(const ScoreColumn& column, std::size_t index) {
  const auto rank = column.rank(index);
  return rank ? fmt::format("{} of {}", *rank, column.count()) : "";
}

std::string labels_section(const ReportData& data, const HeadInfo& info) {
  std::string html = "<section id=\"labels\"><h2>Labels</h2>";
  if (info.labels.empty()) {
    html += "<p>" + label_badge("none") + " No score of this head reached its threshold.</p>";
    return html + "</section>\n";
  }
  html += "<ul>";
  for (const auto& label : info.labels) {
    const std::string score = score_of_label(label);
    const ScoreColumn* column = data.score(score);
    std::string why;
    if (column) {
      const std::size_t index = static_cast<std::size_t>(info.layer * data.heads + info.head);
      why = fmt::format("{} = {}", escape_html(score), format_number(column->values[index]));
      if (column->threshold) why += fmt::format(", threshold {}", format_number(*column->threshold));
      if (label == "syntactic") why += " (best accuracy − baseline; see the relation table)";
    }
    html += "<li>" + label_badge(label) + (label == info.primary ? " <strong>primary</strong> " : " ") + why + "</li>";
  }
  return html + "</ul></section>\n";
}

std::string positional_evidence(const Json& value) {
  if (!value.is_object() || !value.contains("offset")) return "";
  const Json offset = value["offset"];
  std::string target = "i";
  if (offset.is_number_integer()) target += format_number(offset.get<int>(), 0).insert(0, offset.get<int>() >= 0 ? "+" : "");
  const auto number = [&](const char* key) {
    return value.contains(key) && value[key].is_number() ? std::optional<double>(value[key].get<double>()) : std::nullopt;
  };
  return fmt::format(
      "<p>Best offset <strong>{}</strong>: a query <i>i</i> puts on average <strong>{}</strong> of its attention on "
      "<i>{}</i>, and <i>{}</i> is its argmax for <strong>{}</strong> of the queries.</p>",
      escape_html(target.substr(1)), format_number(number("weight")), escape_html(target), escape_html(target),
      format_number(number("argmax_rate")));
}

std::string syntactic_table(const Json& table, const std::map<std::string, double>& thresholds) {
  const auto threshold = [&](const char* name, double fallback) {
    const auto found = thresholds.find(name);
    return found == thresholds.end() ? fallback : found->second;
  };
  if (!table.is_object() || table.empty()) return "";
  std::string html = "<h3>Dependency relations</h3><p class=\"note\">Accuracy: share of arcs where the word attended most "
                     "is the relation's target; baseline: share at the most common word offset. A relation passes when "
                     "accuracy ≥ baseline + " + format_number(threshold("syntactic", 0.1)) +
                     " with at least " + format_number(threshold("syntactic_support", 20), 0) +
                     " arcs (Clark et al. 2019).</p><div class=\"table-wrap\">"
                     "<table class=\"data sortable\"><thead><tr><th>relation</th><th>direction</th><th>accuracy</th>"
                     "<th>baseline</th><th>accuracy − baseline</th><th>baseline offset</th><th>support</th><th>passed</th>"
                     "</tr></thead><tbody>";
  for (const auto& [relation, entry] : table.items()) {
    if (!entry.is_object()) continue;
    const auto number = [&](const char* key) -> std::optional<double> {
      return entry.contains(key) && entry[key].is_number() ? std::optional<double>(entry[key].get<double>()) : std::nullopt;
    };
    const auto accuracy = number("accuracy");
    const auto baseline = number("baseline");
    const std::optional<double> margin = accuracy && baseline ? std::optional<double>(*accuracy - *baseline) : std::nullopt;
    const bool passed = entry.value("passed", false);
    html += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=\"num\" data-sort=\"{}\">{}</td><td class=\"num\" data-sort=\"{}\">{}</td>"
        "<td class=\"num\" data-sort=\"{}\">{}</td><td class=\"num\">{}</td><td class=\"num\" data-sort=\"{}\">{}</td><td>{}</td></tr>",
        escape_html(relation), json_value_html(entry.value("direction", Json(nullptr))), accuracy.value_or(0),
        format_number(accuracy), baseline.value_or(0), format_number(baseline), margin.value_or(0), format_number(margin),
        json_value_html(entry.value("baseline_offset", Json(nullptr))), number("support").value_or(0),
        json_value_html(entry.value("support", Json(nullptr))), passed ? "✓" : "");
  }
  return html + "</tbody></table></div>";
}

std::string scores_section(const ReportData& data, const HeadInfo& info) {
  const std::size_t index = static_cast<std::size_t>(info.layer * data.heads + info.head);
  std::string html = "<section id=\"scores\"><h2>Scores</h2><div class=\"table-wrap\" style=\"max-height:none\">"
                     "<table class=\"data\"><thead><tr><th>score</th><th>value</th><th>threshold</th><th>rank</th>"
                     "<th>what it measures</th></tr></thead><tbody>";
  std::vector<std::string> names;
  for (const auto& column : data.scores) names.push_back(column.name);
  if (info.scores) {
    for (const auto& [name, value] : info.scores->items()) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  std::string evidence;
  for (const auto& name : names) {
    const Json* value = info.scores && info.scores->contains(name) ? &(*info.scores)[name] : nullptr;
    const ScoreColumn* column = data.score(name);
    html += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                        escape_html(name), escape_html(score_text(value)),
                        column && column->threshold ? format_number(*column->threshold) : "",
                        column ? rank_text(*column, index) : "", escape_html(score_meaning(name)));
    if (!value) continue;
    if (name == "positional") evidence += "<h3>Positional</h3>" + positional_evidence(*value);
    if (name == "syntactic") evidence += syntactic_table(*value, data.thresholds);
  }
  return html + "</tbody></table></div>" + evidence + "</section>\n";
}

std::string confident_section(const std::vector<ExampleSequence>& examples, const HeadInfo& info) {
  const auto queries = most_confident_queries(examples, info.layer, info.head, 12);
  std::string html = "<section id=\"confident\"><h2>Most confident queries</h2><p class=\"note\">Queries of the example "
                     "sequences where this head puts the most weight on one token, with that token.</p>";
  if (queries.empty()) return html + "<p class=\"note\">No example sequences were kept.</p></section>\n";
  html += "<div class=\"table-wrap\"><table class=\"data\"><thead><tr><th>weight</th><th>query</th><th></th>"
          "<th>attended token</th><th>offset</th><th>example</th></tr></thead><tbody>";
  for (const auto& query : queries) {
    const ExampleSequence& example = examples[query.example];
    html += fmt::format(
        "<tr><td class=\"num\">{}</td><td>{} <span class=\"tok\">{}</span></td><td>→</td><td>{} <span class=\"tok\">{}</span></td>"
        "<td class=\"num\">{:+d}</td><td>{}</td></tr>",
        format_number(query.weight), query.query, escape_html(display_token(example.tokens[query.query], 40)), query.key,
        escape_html(display_token(example.tokens[query.key], 40)),
        static_cast<long>(query.key) - static_cast<long>(query.query), escape_html(example.source));
  }
  return html + "</tbody></table></div></section>\n";
}

}  // namespace

std::string head_page(const nlohmann::ordered_json& document, const ReportData& data, const HeadInfo& info,
                      const std::vector<ExampleSequence>& examples, const std::vector<ExampleSequence>& probes,
                      const ReportContents& contents) {
  const Json model = document.value("model", Json::object());
  const std::string name = model.is_object() && model.contains("name") && model["name"].is_string()
                               ? model["name"].get<std::string>() : std::string("model");
  const std::string id = info.id();
  std::string html = page_start(id + " · " + name + " · headscan");
  html += fmt::format("<header class=\"top\"><h1 data-head-id=\"{0}\">{0}: layer {1}, head {2}</h1><div class=\"sub\">{3}",
                      id, info.model_layer, info.head, escape_html(name));
  // Only a grouped-query model's heads share keys and values.
  if (info.kv_group && data.grouped_query) html += fmt::format(" · key/value group {}", *info.kv_group);
  html += " · ";
  for (const auto& label : info.labels) html += label_badge(label);
  if (info.labels.empty()) html += label_badge("none");
  html += "</div><div class=\"headnav\"><a href=\"../index.html\">← all heads</a>";
  const int index = info.layer * data.heads + info.head;
  if (index > 0) html += fmt::format("<a href=\"{0}.html\">previous: {0}</a>", data.head_list[static_cast<std::size_t>(index - 1)].id());
  if (index + 1 < static_cast<int>(data.head_list.size())) {
    html += fmt::format("<a href=\"{0}.html\">next: {0}</a>", data.head_list[static_cast<std::size_t>(index + 1)].id());
  }
  const std::string causal = causal_head_section(data, info);
  const std::string needles = head_needle_section(document, info.layer, info.head);
  html += "</div></header><nav class=\"sections\"><a href=\"#labels\">Labels</a><a href=\"#scores\">Scores</a>";
  if (!needles.empty()) html += "<a href=\"#needles\">Needle in a haystack</a>";
  if (!causal.empty()) html += "<a href=\"#causal\">Causal evidence</a>";
  if (!probes.empty()) html += "<a href=\"#probe\">Probe stripe</a>";
  html += "<a href=\"#attention\">Attention</a><a href=\"#confident\">Confident queries</a></nav><main>";
  html += labels_section(data, info);
  html += scores_section(data, info);
  html += needles;
  html += causal;

  if (!probes.empty() && contents.viewer.probe) {
    html += "<section id=\"probe\"><h2>Probe stripe</h2><p class=\"note\">Attention on a probe sequence [BOS] R R R R "
            "(random tokens repeated). An induction head attends to the token after the earlier occurrence of the "
            "current one: a stripe parallel to the diagonal, one repeat length below it; a duplicate-token head draws "
            "the stripe one position further left.</p><canvas class=\"probe\" width=\"0\" height=\"0\"></canvas>";
    if (contents.induction_plot) html += "<p class=\"note\">Top induction heads: <a href=\"../plots/induction.png\">plots/induction.png</a></p>";
    html += "</section>\n";
  }

  html += "<section id=\"attention\"><h2>Attention on example sequences</h2>";
  if (contents.plots && contents.attention_plots > 0) {
    html += "<div class=\"figures\">";
    for (std::size_t k = 0; k < contents.attention_plots && k < examples.size(); ++k) {
      html += fmt::format("<figure><img class=\"plot\" src=\"../plots/attention/{}_{}.png\" alt=\"attention of {} on {}\">"
                          "<figcaption>{}</figcaption></figure>",
                          id, k, id, escape_html(examples[k].source), escape_html(examples[k].source));
    }
    html += "</div>";
  }
  html += "<h3>Interactive</h3>" + viewer_html(data, true) + "</section>\n";
  html += confident_section(examples, info);
  if (info.entry) {
    html += "<section id=\"raw\"><details class=\"raw\"><summary>This head in heads.json</summary><pre>" +
            escape_html(info.entry->dump(2, ' ', false, Json::error_handler_t::replace)) + "</pre></details></section>";
  }
  html += "</main>";
  const Json config = {{"page", "head"},       {"root", "../"},          {"id", id},
                       {"layer", info.model_layer},  {"head", info.head},      {"layers", data.layers},
                       {"heads", data.heads},  {"stops", attention_stop_list()},
                       {"examples", contents.viewer.corpus_examples + (contents.viewer.probe ? 1 : 0)},
                       {"headInfo", Json::array({head_summary(data, info)})}};
  html += page_end(config);
  return html;
}

}  // namespace headscan
