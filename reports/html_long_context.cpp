#include "reports/html_long_context.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/html_page.h"
#include "reports/model_layers_json.h"
#include "reports/palette.h"
#include "reports/text.h"

namespace headscan {
namespace {

using Json = nlohmann::ordered_json;

std::string percent(const Json& value) {
  if (!value.is_number()) return "—";
  return fmt::format("{:.1f} %", 100.0 * value.get<double>());
}

// A cell of a length × depth grid: the share `part / whole` on the viridis scale, "—" without a
// denominator; the title says the counts.
std::string grid_cell(std::int64_t part, std::int64_t whole, const std::string& what) {
  if (whole <= 0) return fmt::format("<td class=\"empty\" title=\"no {}\">—</td>", escape_html(what));
  const double share = static_cast<double>(part) / static_cast<double>(whole);
  const Rgb fill = viridis(share);
  return fmt::format("<td style=\"background:{};color:{}\" title=\"{} of {} {}\">{:.0f} %</td>", to_hex(fill),
                     to_hex(text_colour_on(fill)), part, whole, escape_html(what), 100.0 * share);
}

// A table of rows = lengths, columns = depths; `part` and `whole` are [length][depth] counts.
std::string grid_table(const Json& lengths, const Json& depths, const Json& part, const Json& whole,
                       const std::string& what, const std::string& css_class) {
  std::string html = "<table class=\"needlegrid " + css_class + "\"><tr><th>tokens \\ depth</th>";
  for (const auto& depth : depths) html += "<th>" + percent(depth) + "</th>";
  html += "</tr>";
  for (std::size_t length = 0; length < lengths.size(); ++length) {
    html += "<tr><th>" + json_value_html(lengths[length]) + "</th>";
    for (std::size_t depth = 0; depth < depths.size(); ++depth) {
      const Json& p = part.at(length).at(depth);
      const Json& w = whole.at(length).at(depth);
      html += grid_cell(p.is_number_integer() ? p.get<std::int64_t>() : 0,
                        w.is_number_integer() ? w.get<std::int64_t>() : 0, what);
    }
    html += "</tr>";
  }
  return html + "</table>";
}

// Whether `grid` is [lengths][depths] of numbers.
bool grid_shaped(const Json& grid, std::size_t lengths, std::size_t depths) {
  if (!grid.is_array() || grid.size() != lengths) return false;
  for (const auto& row : grid) {
    if (!row.is_array() || row.size() != depths) return false;
  }
  return true;
}

// The heads whose grids the section draws: the highest retrieval scores, at most kGridHeads.
constexpr std::size_t kGridHeads = 8;
std::vector<std::size_t> retrieval_heads(const Json& heads) {
  std::vector<std::pair<double, std::size_t>> scored;
  for (std::size_t index = 0; index < heads.size(); ++index) {
    const Json scores = heads[index].value("scores", Json::object());
    const Json score = scores.is_object() ? scores.value("retrieval", Json()) : Json();
    if (score.is_number() && score.get<double>() > 0) scored.emplace_back(score.get<double>(), index);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::size_t> chosen;
  for (std::size_t i = 0; i < scored.size() && i < kGridHeads; ++i) chosen.push_back(scored[i].second);
  return chosen;
}

// Wu et al.'s needle-in-a-haystack grid per head: its retrieval hits over the copy events.
std::string head_grids(const Json& retrieval, const Json& heads) {
  const Json lengths = retrieval.value("lengths", Json::array());
  const Json depths = retrieval.value("depths", Json::array());
  const Json events = retrieval.value("grid", Json::object()).value("copy_events", Json());
  const Json hits = retrieval.value("head_hits", Json());
  if (!hits.is_array() || hits.empty() || !hits[0].is_array() || hits[0].empty() || !heads.is_array()) return "";
  const std::size_t per_layer = hits[0].size();
  std::string html;
  for (const std::size_t index : retrieval_heads(heads)) {
    const std::size_t row = index / per_layer;
    const Json& head = heads[index];
    if (row >= hits.size() || !hits[row].is_array()) continue;
    const Json& cells = hits[row].at(index % per_layer);
    if (!grid_shaped(cells, lengths.size(), depths.size())) continue;
    html += fmt::format("<figure class=\"headgrid\"><figcaption>L{} H{}: retrieval {}</figcaption>",
                        json_value_html(head.value("layer", Json())), json_value_html(head.value("head", Json())),
                        json_value_html(head["scores"]["retrieval"]));
    html += grid_table(lengths, depths, cells, events, "copy events where the head's argmax key is the copied token",
                       "small") +
            "</figure>";
  }
  if (html.empty()) return "";
  return "<p>Per head, the share of the model's copy events where the head's argmax key is the needle token "
         "copied (hits / copy events), for the heads of the highest retrieval scores:</p><div class=\"headgrids\">" +
         html + "</div>";
}

// "4096, 8192 and 16384"
std::string length_list(const Json& lengths) {
  std::string text;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    if (i > 0) text += i + 1 == lengths.size() ? " and " : ", ";
    text += json_value_html(lengths[i]);
  }
  return text;
}

std::string needle_table(const Json& retrieval, const Json& heads) {
  if (!retrieval.is_object()) return "";
  std::string html = "<h3>Needle in a haystack</h3>";
  if (retrieval.contains("note")) html += "<p class=\"note\">" + json_value_html(retrieval["note"]) + "</p>";
  const Json depths = retrieval.value("depths", Json::array());
  const Json accuracy = retrieval.value("copy_accuracy", Json::array());
  if (retrieval.value("probes", 0) <= 0 || !depths.is_array() || depths.size() != accuracy.size()) return html;
  const Json lengths = retrieval.value("lengths", Json::array());
  const Json grid = retrieval.value("grid", Json::object());
  const bool has_grid = lengths.is_array() && !lengths.empty() && grid.is_object() &&
                        grid_shaped(grid.value("copy_events", Json()), lengths.size(), depths.size()) &&
                        grid_shaped(grid.value("candidates", Json()), lengths.size(), depths.size());
  html += fmt::format("<p class=\"note\">{} probes of {} tokens: haystacks of corpus text, a needle of {} random tokens "
                      "at each depth and again at the end. The model's copy accuracy is the share of the final "
                      "needle's tokens (after its first) it predicts; {} copy events in all.</p>",
                      json_value_html(retrieval.value("probes", Json())),
                      has_grid ? length_list(lengths) : json_value_html(retrieval.value("haystack_tokens", Json())),
                      json_value_html(retrieval.value("needle_length", Json())),
                      json_value_html(retrieval.value("copy_events", Json())));
  if (has_grid) {
    html += "<p>The model's copy accuracy by probe length (rows, tokens) and needle depth (columns):</p>";
    html += grid_table(lengths, depths, grid["copy_events"], grid["candidates"], "final-needle tokens predicted", "");
    html += "<p class=\"note\">Colours: the share on the viridis scale, from 0 % (dark blue) to 100 % (yellow); a "
            "cell's title gives its counts, — a cell without probes.</p>";
    return html + head_grids(retrieval, heads);
  }
  html += "<table class=\"kv needle\"><tr><th>depth</th>";
  for (const auto& depth : depths) html += "<td>" + percent(depth) + "</td>";
  html += "</tr><tr><th>copy accuracy</th>";
  for (const auto& value : accuracy) html += "<td>" + percent(value) + "</td>";
  return html + "</tr></table>";
}

// The plan's rows are the attention layers; `numbering` names them by the model's index.
std::string plan_map(const Json& plan, const LayerNumbering& numbering) {
  const Json full = plan.value("full_attention_heads", Json::array());
  if (!full.is_array() || full.empty() || !full[0].is_array()) return "";
  const std::size_t columns = full[0].size();
  const Rgb full_colour = label_colour("retrieval");
  const Rgb streaming_colour = label_colour("streaming");
  std::string html = fmt::format(
      "<div class=\"grid kvplan\" style=\"grid-template-columns: 3.2em repeat({}, minmax(22px, 40px))\"><div></div>",
      columns);
  for (std::size_t kv = 0; kv < columns; ++kv) html += fmt::format("<div class=\"axis\">{}</div>", kv);
  for (std::size_t layer = 0; layer < full.size(); ++layer) {
    const int named = numbering.model_index(static_cast<int>(layer));
    html += fmt::format("<div class=\"axis row\">L{}</div>", named);
    for (std::size_t kv = 0; kv < columns && kv < full[layer].size(); ++kv) {
      const bool keeps_all = full[layer][kv].is_number() && full[layer][kv].get<int>() == 1;
      const Rgb fill = keeps_all ? full_colour : streaming_colour;
      html += fmt::format("<div class=\"cell\" data-plan=\"{0}\" title=\"L{1} key/value head {2}: {0}\" "
                          "style=\"background:{3};color:{4}\">{5}</div>",
                          keeps_all ? "full" : "streaming", named, kv, to_hex(fill), to_hex(text_colour_on(fill)),
                          keeps_all ? "F" : "S");
    }
  }
  html += "</div>";
  html += fmt::format("<p class=\"note\"><span class=\"swatch\" style=\"background:{}\"></span> F full cache "
                      "<span class=\"swatch\" style=\"background:{}\"></span> S streaming cache</p>",
                      to_hex(full_colour), to_hex(streaming_colour));
  return html;
}

// The plan's check on the needle probes (--ablation), a column per probe length: the full model's
// copy events and the share the restricted model still makes, with its loss change on them.
std::string plan_needles(const Json& plan) {
  if (plan.contains("needles_note")) return "<p class=\"note\">" + json_value_html(plan["needles_note"]) + "</p>";
  const Json needles = plan.value("needles", Json());
  if (!needles.is_object()) return "";  // no check without --ablation
  const auto row = [&](const char* key) {
    const Json values = needles.value(key, Json());
    return values.is_array() ? values : Json::array();
  };
  const Json lengths = row("lengths");
  if (lengths.empty()) return "";
  const Json events = row("copy_events");
  const Json accuracy = row("copy_accuracy");
  const Json loss = row("loss_delta");
  const auto cell = [](const Json& values, std::size_t index, const auto& text) {
    return "<td>" + (index < values.size() ? text(values[index]) : std::string("—")) + "</td>";
  };
  std::string html =
      "<p>On the needle probes, with every streaming head restricted to its cache: the share of the model's copy "
      "events it still makes, and the change of its loss on the copied needle tokens.</p><table class=\"kv\"><tr>"
      "<th>needle probes (tokens)</th>";
  for (const auto& length : lengths) html += "<td>" + json_value_html(length) + "</td>";
  html += "</tr><tr><th>copy events</th>";
  for (std::size_t i = 0; i < lengths.size(); ++i) html += cell(events, i, json_value_html);
  html += "</tr><tr><th>still copied</th>";
  for (std::size_t i = 0; i < lengths.size(); ++i) html += cell(accuracy, i, percent);
  html += "</tr><tr><th>loss change (nats)</th>";
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    html += cell(loss, i, [](const Json& value) {
      return value.is_number() ? fmt::format("{:+.4f}", value.get<double>()) : std::string("—");
    });
  }
  return html + "</tr></table>";
}

std::string plan_summary(const Json& plan) {
  std::string html = fmt::format(
      "<p>{} of {} key/value heads keep a full cache; the others keep {} sink tokens and the {} most recent "
      "(<code>kv_plan/</code> holds the plan as DuoAttention's <code>load_attn_pattern</code> reads it).</p>",
      json_value_html(plan.value("full_kv_heads", Json())), json_value_html(plan.value("kv_heads", Json())),
      json_value_html(plan.value("sink_size", Json())), json_value_html(plan.value("recent_size", Json())));
  const Json saved = plan.value("memory_saved", Json::object());
  if (saved.is_object() && !saved.empty()) {
    html += "<table class=\"kv\"><tr><th>context (tokens)</th>";
    for (const auto& [context, share] : saved.items()) html += "<td>" + escape_html(context) + "</td>";
    html += "</tr><tr><th>KV memory saved</th>";
    for (const auto& [context, share] : saved.items()) html += "<td>" + percent(share) + "</td>";
    html += "</tr></table>";
  }
  if (plan.contains("loss_delta")) {
    html += fmt::format("<p>With every streaming head restricted to its cache, the loss on the ablation set changes by "
                        "<strong>{:+.4f}</strong> nats.</p>",
                        plan["loss_delta"].is_number() ? plan["loss_delta"].get<double>() : 0.0);
  }
  if (plan.contains("loss_note")) html += "<p class=\"note\">" + json_value_html(plan["loss_note"]) + "</p>";
  return html + plan_needles(plan);
}

}  // namespace

std::string head_needle_section(const Json& document, int layer, int head) {
  const Json retrieval = document.value("retrieval", Json());
  if (!retrieval.is_object()) return "";
  const Json lengths = retrieval.value("lengths", Json::array());
  const Json depths = retrieval.value("depths", Json::array());
  const Json events = retrieval.value("grid", Json::object()).value("copy_events", Json());
  const Json hits = retrieval.value("head_hits", Json());
  if (!lengths.is_array() || !depths.is_array() || !grid_shaped(events, lengths.size(), depths.size()) ||
      retrieval.value("copy_events", 0) <= 0 || layer < 0 || head < 0 || !hits.is_array() ||
      static_cast<std::size_t>(layer) >= hits.size() || !hits[static_cast<std::size_t>(layer)].is_array() ||
      static_cast<std::size_t>(head) >= hits[static_cast<std::size_t>(layer)].size()) {
    return "";
  }
  const Json& cells = hits[static_cast<std::size_t>(layer)][static_cast<std::size_t>(head)];
  if (!grid_shaped(cells, lengths.size(), depths.size())) return "";
  return "<section id=\"needles\"><h2>Needle in a haystack</h2><p class=\"note\">The share of the model's copy "
         "events on the needle probes where this head's argmax key is the needle token copied (its retrieval hits / "
         "copy events), by probe length (rows, tokens) and needle depth (columns); a cell's title gives its "
         "counts.</p>" +
         grid_table(lengths, depths, cells, events, "copy events where the head's argmax key is the copied token", "") +
         "</section>\n";
}

std::string long_context_section(const Json& document) {
  const Json summary = document.value("summary", Json());
  const Json retrieval = document.value("retrieval", Json());
  const Json plan = document.value("kv_plan", Json());
  if (!summary.is_object() && !retrieval.is_object() && !plan.is_object()) return "";
  std::string html = "<section id=\"long-context\"><h2>Long context and KV cache</h2>";
  if (summary.is_object() && summary.contains("sink_rate")) {
    html += fmt::format("<p>Sink rate: <strong>{}</strong> of heads ({} heads) put at least {} of their attention on "
                        "the first token (Gu et al. 2024).</p>",
                        percent(summary["sink_rate"]), json_value_html(summary.value("sink_heads", Json())),
                        json_value_html(summary.value("sink_threshold", Json())));
  }
  html += needle_table(retrieval, document.value("heads", Json::array()));
  if (plan.is_object()) {
    const Json model = document.value("model", Json::object());
    const LayerNumbering numbering =
        model.is_object() && model.contains("layers") ? document_layers(model, "heads.json").numbering : LayerNumbering();
    html += "<h3>KV-cache plan</h3>" + plan_summary(plan) + plan_map(plan, numbering);
  } else if (document.contains("model") && !document["model"].value("causal", true)) {
    html += "<p class=\"note\">A bidirectional model keeps no KV cache: no plan.</p>";
  }
  return html + "</section>\n";
}

}  // namespace headscan
