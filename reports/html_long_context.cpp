#include "reports/html_long_context.h"

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

std::string needle_table(const Json& retrieval) {
  if (!retrieval.is_object()) return "";
  std::string html = "<h3>Needle in a haystack</h3>";
  if (retrieval.contains("note")) html += "<p class=\"note\">" + json_value_html(retrieval["note"]) + "</p>";
  const Json depths = retrieval.value("depths", Json::array());
  const Json accuracy = retrieval.value("copy_accuracy", Json::array());
  if (retrieval.value("probes", 0) <= 0 || !depths.is_array() || depths.size() != accuracy.size()) return html;
  html += fmt::format("<p class=\"note\">{} probes: {} haystacks of {} corpus tokens, a needle of {} random tokens "
                      "at each depth and again at the end. The model's copy accuracy is the share of the final "
                      "needle's tokens (after its first) it predicts; {} copy events in all.</p>",
                      json_value_html(retrieval.value("probes", Json())), json_value_html(retrieval.value("haystacks", Json())),
                      json_value_html(retrieval.value("haystack_tokens", Json())),
                      json_value_html(retrieval.value("needle_length", Json())),
                      json_value_html(retrieval.value("copy_events", Json())));
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
  return html;
}

}  // namespace

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
  html += needle_table(retrieval);
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
