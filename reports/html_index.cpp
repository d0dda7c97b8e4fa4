// index.html: the report's front page.
#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/html.h"
#include "reports/html_causal.h"
#include "reports/html_long_context.h"
#include "reports/model_layers_json.h"
#include "reports/palette.h"
#include "reports/plots.h"
#include "reports/text.h"

namespace headscan {

namespace {

using Json = nlohmann::ordered_json;

// A key/value table of a heads.json object: `known` keys first with their titles, then the rest.
std::string object_table(const Json& object, const std::vector<std::pair<const char*, const char*>>& known) {
  if (!object.is_object()) return "<p class=\"note\">not in heads.json</p>";
  std::string html = "<table class=\"kv\">";
  auto row = [&](const std::string& title, const Json& value) {
    html += fmt::format("<tr><th>{}</th><td>{}</td></tr>", escape_html(title), json_value_html(value));
  };
  for (const auto& [key, title] : known) {
    if (object.contains(key)) row(title, object[key]);
  }
  for (const auto& [key, value] : object.items()) {
    const bool listed = std::any_of(known.begin(), known.end(), [&](const auto& k) { return key == k.first; });
    if (!listed) row(key, value);
  }
  return html + "</table>";
}

// Syntactic labels exist only where sentences were parsed; say how many were.
std::string parses_note(const Json& corpus) {
  if (!corpus.is_object() || !corpus.contains("parser")) return "";
  const std::string parser = corpus.value("parser", "none");
  const Json parsed = corpus.value("parsed_sentences", Json(nullptr));
  const Json sentences = corpus.value("sentences", Json(nullptr));
  if (parser == "conllu") {
    return fmt::format("<p class=\"note\">Syntactic labels need dependency parses: {} of {} sentences have one, the "
                       "CoNLL-U corpus's own trees.</p>",
                       json_value_html(parsed), json_value_html(sentences));
  }
  if (parser == "none") {
    return "<p class=\"note\">Syntactic labels need dependency parses: none were made (<code>--parser none</code>). "
           "Give plain English text (parsed by link-grammar) or a CoNLL-U corpus (<code>.conllu</code>).</p>";
  }
  return fmt::format("<p class=\"note\">Syntactic labels need dependency parses: {} of {} sentences have one ({}). "
                     "link-grammar parses English only; for other languages give a CoNLL-U corpus from a parser for "
                     "that language.</p>",
                     json_value_html(parsed), json_value_html(sentences), escape_html(parser));
}

// A model without a language-model head: what its report lacks and why (heads.json's
// model.lm_head_note), said where the model is described.
std::string lm_head_note(const Json& model) {
  if (!model.is_object() || !model.contains("lm_head_note")) return {};
  return "<p class=\"note\"><strong>No logits.</strong> " + json_value_html(model["lm_head_note"]) + ".</p>";
}

// The model's card: "layers" a number (attention layers; of the model's N when some have no map)
// rather than the list of heads.json, and why the layer numbering is the maps' order when it is.
Json model_card(Json model, const ReportData& data) {
  if (!model.is_object()) return model;
  if (!data.model_layers.empty()) {
    const std::size_t without_maps = data.layers_without_maps().size();
    model["layers"] = without_maps == 0 ? Json(data.layers)
                                        : Json(fmt::format("{} of {} have attention maps", data.layers, data.model_layers.size()));
  }
  return model;
}

std::string summary_section(const Json& document, const ReportData& data) {
  const Json model = document.value("model", Json::object());
  const Json corpus = document.value("corpus", Json::object());
  std::string html = "<section id=\"summary\"><h2>What was analysed</h2>";
  const std::size_t without_maps = data.layers_without_maps().size();
  if (without_maps == 0) {
    html += fmt::format("<p>{} layers × {} heads = {} heads", data.layers, data.heads, data.layers * data.heads);
  } else {
    html += fmt::format("<p>{} attention layers (of the model's {}: {} without an attention map) × {} heads = {} heads",
                        data.layers, data.model_layers.size(), without_maps, data.heads, data.layers * data.heads);
  }
  if (corpus.is_object() && corpus.contains("tokens")) {
    html += fmt::format(", {} tokens in {} sequences", json_value_html(corpus["tokens"]),
                        json_value_html(corpus.value("sequences", Json(nullptr))));
  }
  html += ".</p><div class=\"cards\">";
  html += "<div class=\"card\"><h3>Model</h3>" +
          object_table(model_card(model, data), {{"name", "name"}, {"path", "file"}, {"layers", "layers"}, {"heads", "heads"},
                               {"kv_heads", "key/value heads"}, {"causal", "causal"}, {"causal_source", "causal from"}, {"dtype", "dtype"},
                               {"capture", "attention captured from"}, {"tokenizer", "tokenizer"},
                               {"bos_token", "BOS token"}, {"max_length", "max length"},
                               {"repeat_loss", "loss on repeated tokens"}, {"forward", "forward"},
                               {"layers_note", "layer numbering"}}) +
          lm_head_note(model) + "</div>";
  html += "<div class=\"card\"><h3>Corpus</h3>" +
          object_table(corpus, {{"path", "file"}, {"format", "format"}, {"lines", "lines"}, {"documents", "documents"},
                                {"sequences", "sequences"}, {"tokens", "tokens"}, {"parser", "parser"},
                                {"sentences", "sentences seen by the parser"},
                                {"parsed_sentences", "parsed sentences"},
                                {"lines_with_invalid_utf8", "lines with invalid UTF-8"},
                                {"truncated", "stopped early (--max-sequences)"}}) +
          parses_note(corpus) + "</div>";
  html += "<div class=\"card\"><h3>Thresholds and run</h3>" +
          object_table(document.value("thresholds", Json::object()), {}) + "<h3>Run</h3>" +
          object_table(document.value("run", Json::object()), {{"seconds", "seconds"}, {"tokens_per_second", "tokens/s"}}) +
          fmt::format("<p class=\"note\">headscan {}</p>", json_value_html(document.value("headscan_version", Json(nullptr)))) +
          "</div></div>";
  const Json warnings = document.value("warnings", Json::array());
  if (warnings.is_array() && !warnings.empty()) {
    html += "<div class=\"warnings\"><strong>Warnings</strong><ul>";
    for (const auto& warning : warnings) html += "<li>" + json_value_html(warning) + "</li>";
    html += "</ul></div>";
  }
  return html + "</section>\n";
}

std::vector<std::string> labels_present(const ReportData& data) {
  std::vector<std::string> present;
  for (const auto& label : report_labels()) {
    const bool used = std::any_of(data.head_list.begin(), data.head_list.end(), [&](const HeadInfo& info) {
      return info.primary == label || std::find(info.labels.begin(), info.labels.end(), label) != info.labels.end();
    });
    if (used) present.push_back(label);
  }
  return present;
}

// The layers of the model that have no attention map (linear attention, state space, …), which
// the head map has no row for; empty when every layer has one or the numbering is unknown.
std::string layers_without_maps_note(const ReportData& data) {
  const std::vector<std::string> names = data.layers_without_maps();
  if (names.empty()) return {};
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ", ") + escape_html(name);
  return fmt::format("<p class=\"note\" id=\"layers-without-maps\">Layers without an attention map (not analysed, no "
                     "row above): {}.</p>", list);
}

std::string grid_header(const ReportData& data, const std::string& cell_size) {
  std::string html = fmt::format("style=\"grid-template-columns: 3.2em repeat({}, {})\"><div></div>", data.heads, cell_size);
  for (int head = 0; head < data.heads; ++head) html += fmt::format("<div class=\"axis\">{}</div>", head);
  return html;
}

std::string head_map_section(const ReportData& data, const ReportContents& contents) {
  const std::string colour_switch = map_colour_switch(data);
  std::string html = "<section id=\"map\"><h2>Head map</h2><p class=\"note\">Layers are rows, heads columns; colour: "
                     "primary label";
  html += colour_switch.empty() ? "" : " or, with the switch, a causal score (--ablation)";
  html += ". Hover a head for all its scores, click it for its page.</p>" + colour_switch;
  const bool small = data.heads > 24;
  html += "<div class=\"grid headmap\" " + grid_header(data, small ? "22px" : "minmax(30px, 52px)");
  for (int layer = 0; layer < data.layers; ++layer) {
    html += fmt::format("<div class=\"axis row\">L{}</div>", data.model_layer(layer));
    for (int head = 0; head < data.heads; ++head) {
      const HeadInfo& info = data.at(layer, head);
      const Rgb fill = label_colour(info.primary);
      std::string tag;
      if (!small) tag = escape_html(label_tag(info.primary));
      if (!small && info.labels.size() > 1) tag += "+";
      html += fmt::format(
          "<a class=\"cell\" href=\"heads/{0}.html\" data-head-id=\"{0}\" data-layer=\"{1}\" data-head=\"{2}\" "
          "aria-label=\"{0} {3}\" style=\"background:{4};color:{5}\"{7}>{6}</a>",
          info.id(), info.model_layer, head, escape_html(info.primary), to_hex(fill), to_hex(text_colour_on(fill)), tag,
          map_cell_colours(data, info));
    }
  }
  html += "</div>" + layers_without_maps_note(data);
  if (colour_switch.empty()) {
    html += label_legend(report_labels());
  } else {
    html += "<div data-map-legend=\"label\">" + label_legend(report_labels()) + "</div>" + map_colour_legends(data);
  }
  if (contents.plots) html += "<p class=\"note\">As PNG: <a href=\"plots/heads.png\">plots/heads.png</a></p>";
  return html + "</section>\n";
}

std::string layers_section(const ReportData& data, const ReportContents& contents) {
  const std::vector<std::string> present = labels_present(data);
  std::string html = "<section id=\"layers\"><h2>Labels per layer</h2><p class=\"note\">Heads of each layer that carry "
                     "a label (a head may carry several); mean distance and entropy over the layer's heads.</p>";
  html += "<div class=\"table-wrap\" style=\"max-height:none;width:max-content;max-width:100%\"><table class=\"data compact\">"
          "<thead><tr><th>layer</th>";
  for (const auto& label : present) html += "<th class=\"count\">" + label_badge(label) + "</th>";
  html += "<th>mean distance</th><th>mean entropy</th></tr></thead><tbody>";
  std::size_t next_model_layer = 0;  // rows for the layers without attention maps, in the model's order
  const auto rows_without_maps = [&](int before) {
    for (; next_model_layer < data.model_layers.size() && data.model_layers[next_model_layer].index < before;
         ++next_model_layer) {
      const ModelLayer& model_layer = data.model_layers[next_model_layer];
      if (model_layer.kind == kAttentionLayer) continue;
      html += fmt::format("<tr class=\"no-map\"><td>{}</td><td colspan=\"{}\" class=\"note\">no attention map</td></tr>",
                          escape_html(layer_label(model_layer)), present.size() + 2);
    }
  };
  for (int layer = 0; layer < data.layers; ++layer) {
    rows_without_maps(data.model_layer(layer));
    html += fmt::format("<tr><td>{}</td>", data.model_layer(layer));
    for (const auto& label : present) {
      int count = 0;
      for (int head = 0; head < data.heads; ++head) {
        const HeadInfo& info = data.at(layer, head);
        const bool has = label == "none" ? info.labels.empty()
                                         : std::find(info.labels.begin(), info.labels.end(), label) != info.labels.end();
        count += has;
      }
      html += fmt::format("<td class=\"count\">{}</td>", count ? std::to_string(count) : "·");
    }
    html += fmt::format("<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                        format_number(data.layer_mean("mean_distance", layer)), format_number(data.layer_mean("entropy", layer)));
  }
  rows_without_maps(std::numeric_limits<int>::max());
  html += "</tbody></table></div>";
  if (contents.plots) html += "<p><img class=\"plot\" src=\"plots/layers.png\" alt=\"label counts, mean distance and entropy per layer\"></p>";
  return html + "</section>\n";
}

std::string heads_table_section(const ReportData& data) {
  const bool grouped = data.grouped_query;
  std::string html = "<section id=\"table\"><h2>All heads</h2><p class=\"note\">Click a column to sort.</p>"
                     "<div class=\"table-wrap\"><table class=\"data sortable\" id=\"heads-table\"><thead><tr>"
                     "<th>head</th><th>layer</th>";
  if (grouped) html += "<th>kv group</th>";
  html += "<th>primary</th><th>labels</th>";
  for (const auto& column : data.scores) {
    html += fmt::format("<th data-score=\"{0}\" title=\"{1}\">{0}</th>", escape_html(column.name), escape_html(column.meaning));
  }
  html += "</tr></thead><tbody>";
  for (std::size_t i = 0; i < data.head_list.size(); ++i) {
    const HeadInfo& info = data.head_list[i];
    html += fmt::format("<tr><td data-sort=\"{}\"><a href=\"heads/{}.html\">{}</a></td><td class=\"num\">{}</td>", i,
                        info.id(), info.id(), info.model_layer);
    if (grouped) html += fmt::format("<td class=\"num\">{}</td>", info.kv_group ? std::to_string(*info.kv_group) : "—");
    html += "<td>" + label_badge(info.primary) + "</td><td>";
    for (std::size_t k = 1; k < info.labels.size(); ++k) html += label_badge(info.labels[k]);
    html += "</td>";
    for (const auto& column : data.scores) {
      const nlohmann::ordered_json* value =
          info.scores && info.scores->contains(column.name) ? &(*info.scores)[column.name] : nullptr;
      html += fmt::format("<td class=\"num\" data-sort=\"{}\">{}</td>", column.values[i] ? fmt::format("{}", *column.values[i]) : "",
                          escape_html(score_text(value)));
    }
    html += "</tr>";
  }
  return html + "</tbody></table></div></section>\n";
}

std::string score_maps_section(const ReportData& data, const ReportContents& contents) {
  const bool signed_scores = std::any_of(data.scores.begin(), data.scores.end(), [](const ScoreColumn& c) { return c.diverging; });
  std::string html = "<section id=\"scores\"><h2>Scores by head</h2><p class=\"note\">One map per score (layers are rows, "
                     "heads columns), colour scale viridis";
  if (signed_scores) html += " (loss changes, which have a sign: blue below 0, white at 0, red above)";
  html += "; hatched: no value. Hover for the value, click for the head.</p><div class=\"scoremaps\">";
  const std::string cell = data.heads > 24 ? "10px" : (data.heads > 8 ? "18px" : "26px");
  for (const auto& column : data.scores) {
    html += fmt::format("<div class=\"scoremap\"><h3>{}</h3><div class=\"meaning\">{}</div><div class=\"grid\" ",
                        escape_html(column.name), escape_html(column.meaning));
    html += grid_header(data, cell);
    for (int layer = 0; layer < data.layers; ++layer) {
      html += fmt::format("<div class=\"axis row\">{}</div>", data.model_layer(layer));
      for (int head = 0; head < data.heads; ++head) {
        const auto& value = column.values[static_cast<std::size_t>(layer * data.heads + head)];
        const std::string id = data.at(layer, head).id();
        if (value) {
          html += fmt::format("<a href=\"heads/{0}.html\" title=\"{0}: {1}\" style=\"background:{2}\"></a>", id,
                              format_number(*value, 3), to_hex(score_colour(column, *value)));
        } else {
          html += fmt::format("<a class=\"missing\" href=\"heads/{0}.html\" title=\"{0}: no value\"></a>", id);
        }
      }
    }
    html += fmt::format("</div><div class=\"scale\">{}<span class=\"bar\" style=\"background:linear-gradient(to right",
                        format_number(column.low));
    for (int i = 0; i <= 8; ++i) html += "," + to_hex(score_colour_map(column)(i / 8.0));
    html += fmt::format(")\"></span>{}", format_number(column.high));
    if (column.threshold) html += " · threshold " + format_number(*column.threshold);
    if (contents.plots) html += fmt::format(" · <a href=\"plots/{0}\">PNG</a>", score_plot_name(column.name));
    html += "</div></div>";
  }
  return html + "</div></section>\n";
}

}  // namespace

std::string viewer_html(const ReportData& data, bool fixed_head) {
  std::string html = "<div class=\"viewer\"><div class=\"controls\"><label>example <select class=\"viewer-example\"></select></label>";
  if (!fixed_head) {
    html += "<label>layer <select class=\"viewer-layer\">";
    for (int layer = 0; layer < data.layers; ++layer) {
      html += fmt::format("<option value=\"{0}\">{0}</option>", data.model_layer(layer));
    }
    html += "</select></label><label>head <select class=\"viewer-head\">";
    for (int head = 0; head < data.heads; ++head) html += fmt::format("<option value=\"{0}\">{0}</option>", head);
    html += fmt::format("</select></label><a class=\"viewer-link\" href=\"heads/{}.html\">open the head's page</a>",
                        data.head_list.front().id());
  }
  html += "</div><div class=\"status\"></div><div class=\"readout\"></div><div class=\"panes\">"
          "<svg class=\"lines\" role=\"img\" aria-label=\"attention lines\"></svg>"
          "<div><canvas class=\"matrix\" width=\"0\" height=\"0\"></canvas><p class=\"note\">rows: queries, columns: "
          "keys; hover for the weight</p></div></div></div>";
  return html;
}

void write_index_page(const std::filesystem::path& directory, const nlohmann::ordered_json& document,
                      const ReportData& data, const ReportContents& contents) {
  const Json model = document.value("model", Json::object());
  const std::string name = model.is_object() && model.contains("name") && model["name"].is_string()
                               ? model["name"].get<std::string>()
                               : std::string("model");
  std::string html = page_start("headscan · " + name);
  html += fmt::format("<header class=\"top\"><h1>{}</h1><div class=\"sub\">headscan report: attention heads by what they do</div></header>",
                      escape_html(name));
  html += "<nav class=\"sections\"><a href=\"#summary\">Summary</a><a href=\"#map\">Head map</a><a href=\"#layers\">Per layer</a>"
          "<a href=\"#table\">All heads</a><a href=\"#scores\">Score maps</a><a href=\"#viewer\">Attention viewer</a>";
  if (contents.induction_plot) html += "<a href=\"#induction\">Induction</a>";
  if (document.contains("summary") || document.contains("kv_plan")) html += "<a href=\"#long-context\">Long context</a>";
  if (data.ablation) html += "<a href=\"#causal\">Causal evidence</a>";
  html += "<a href=\"heads.json\">heads.json</a></nav><main>";
  html += summary_section(document, data);
  html += head_map_section(data, contents);
  html += layers_section(data, contents);
  html += heads_table_section(data);
  html += score_maps_section(data, contents);
  html += long_context_section(document);
  html += causal_index_section(data, contents);
  html += "<section id=\"viewer\"><h2>Attention viewer</h2><p class=\"note\">Pick an example sequence, a layer and a head. "
          "Lines join each query (left) to the keys it attends (right), darker for larger weights.</p>" +
          viewer_html(data, false) + "</section>\n";
  if (contents.induction_plot) {
    html += "<section id=\"induction\"><h2>Induction</h2><p><img class=\"plot\" src=\"plots/induction.png\" "
            "alt=\"probe stripes of the top induction heads\"></p></section>\n";
  }
  html += "</main>";

  // The viewer starts on the first head with the most telling primary label.
  const auto& order = report_labels();
  const HeadInfo* initial = &data.head_list.front();
  auto rank = [&](const HeadInfo& info) { return std::find(order.begin(), order.end(), info.primary) - order.begin(); };
  for (const auto& info : data.head_list) {
    if (rank(info) < rank(*initial)) initial = &info;
  }
  Json heads = Json::array();
  for (const auto& info : data.head_list) heads.push_back(head_summary(data, info));
  const Json config = {{"page", "index"},           {"root", ""},
                       {"layers", data.layers},     {"heads", data.heads},
                       {"stops", attention_stop_list()}, {"initial", {{"layer", initial->model_layer}, {"head", initial->head}}},
                       {"examples", contents.viewer.corpus_examples + (contents.viewer.probe ? 1 : 0)},
                       {"headInfo", heads}};
  html += page_end(config);
  write_text_file(directory / "index.html", html);
}

}  // namespace headscan
