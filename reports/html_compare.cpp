// index.html of `headscan compare`: the runs, the phase-change figure and the small multiples
// (html_compare_charts.cpp), the head maps with a slider over the runs, the label changes and the
// first-to-last diff.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/compare_report.h"
#include "reports/html_assets.h"
#include "reports/html_compare_sections.h"
#include "reports/html_page.h"
#include "reports/palette.h"
#include "reports/plots.h"
#include "reports/text.h"

namespace headscan {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// A relative path as a URL: every byte but unreserved characters and '/' percent-encoded.
std::string url_path(const fs::path& path) {
  std::string url;
  for (const char c : path.generic_string()) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      url += c;
    } else {
      url += fmt::format("%{:02X}", u);
    }
  }
  return url;
}

// Where a run's own report is, relative to the comparison's directory: "" when the run is a
// heads.json without the pages beside it, or a report held in memory.
std::string run_report_link(const CompareRun& run, const fs::path& target) {
  if (run.path.empty()) return "";  // a report held in memory (the Python module)
  std::error_code error;
  const fs::path directory = fs::absolute(run.path, error).parent_path();
  if (error || !fs::is_regular_file(directory / "index.html", error)) return "";
  const fs::path relative = fs::relative(directory, fs::absolute(target, error), error);
  if (error || relative.empty()) return "";
  return url_path(relative) + "/";
}

std::string signed_text(std::optional<double> value, int digits = 2) {
  if (!value) return "—";
  std::string text = format_number(*value, digits);
  if (*value > 0 && text != format_number(0.0, digits)) text.insert(0, "+");
  return text;
}

std::string sort_value(std::optional<double> value) { return value ? fmt::format("{}", *value) : ""; }


std::string runs_section(const CompareView& view, const std::vector<std::string>& links) {
  const Comparison& comparison = *view.comparison;
  const bool losses = std::any_of(view.findings.begin(), view.findings.end(), [](const RunFindings& f) { return f.loss.has_value(); });
  std::string html = "<section id=\"runs\"><h2>Runs</h2><p class=\"note\">";
  switch (comparison.order) {
    case RunOrder::step: html += "In order of training step (<code>step</code> in each model's headscan.json)."; break;
    case RunOrder::steps: html += "In order of the steps given with <code>--steps</code>."; break;
    case RunOrder::given: html += "In the order given on the command line."; break;
  }
  html += fmt::format(" {} layers × {} heads each. Click a run for its own report.</p>", comparison.layers, comparison.heads);
  html += "<div class=\"table-wrap\" style=\"max-height:none\"><table class=\"data sortable\" id=\"runs-table\"><thead><tr>"
          "<th>#</th><th>run</th><th>step</th><th>model</th><th>best induction</th><th>head</th>"
          "<th title=\"loss on repeat 1 minus the mean of repeats 2–4 of the probes\">in-context gap (nats)</th>"
          "<th>repeat loss (nats)</th>";
  if (losses) html += "<th title=\"mean corpus loss (--ablation)\">loss</th>";
  html += "<th>primary labels</th></tr></thead><tbody>";
  for (std::size_t index = 0; index < comparison.runs.size(); ++index) {
    const CompareRun& run = comparison.runs[index];
    const RunFindings& found = view.findings[index];
    const Json& model = run.document["model"];
    const std::string name = escape_html(run.name);
    html += fmt::format("<tr><td class=\"num\" data-sort=\"{0}\">{0}</td><td>{1}</td><td class=\"num\" data-sort=\"{2}\">{3}</td>"
                        "<td>{4}</td>",
                        index, links[index].empty() ? name : fmt::format("<a href=\"{}index.html\">{}</a>", links[index], name),
                        run.step ? std::to_string(*run.step) : "", run.step ? std::to_string(*run.step) : "—",
                        model.contains("name") && model["name"].is_string() ? escape_html(model["name"].get<std::string>()) : "—");
    html += fmt::format("<td class=\"num\" data-sort=\"{}\">{}</td><td>{}</td>", sort_value(found.best_induction),
                        format_number(found.best_induction), found.best_induction ? head_id(comparison.model_layer(found.best_layer), found.best_head) : "—");
    std::vector<std::string> repeats;
    for (const double loss : found.repeat_loss) repeats.push_back(format_number(loss, 2));
    html += fmt::format("<td class=\"num\" data-sort=\"{}\">{}</td><td>{}</td>", sort_value(found.in_context_gap),
                        format_number(found.in_context_gap), repeats.empty() ? "—" : fmt::format("{}", fmt::join(repeats, ", ")));
    if (losses) html += fmt::format("<td class=\"num\" data-sort=\"{}\">{}</td>", sort_value(found.loss), format_number(found.loss, 3));
    std::map<std::string, int> counts;
    for (const HeadInfo& info : view.runs[index].head_list) ++counts[info.primary];
    html += "<td>";
    for (const std::string& label : report_labels()) {
      if (!counts.count(label)) continue;
      const Rgb fill = label_colour(label);
      html += fmt::format("<span class=\"badge\" style=\"background:{};color:{}\">{} {}</span>", to_hex(fill),
                          to_hex(text_colour_on(fill)), counts[label], escape_html(label));
    }
    html += "</td></tr>";
  }
  html += "</tbody></table></div>";
  if (!comparison.warnings.empty()) {
    html += "<div class=\"warnings\"><strong>Warnings</strong><ul>";
    for (const std::string& warning : comparison.warnings) html += "<li>" + escape_html(warning) + "</li>";
    html += "</ul></div>";
  }
  return html + "</section>\n";
}

std::string maps_section(const CompareView& view, const CompareReportOptions& options, const std::vector<std::string>& links) {
  const Comparison& comparison = *view.comparison;
  const std::size_t last = view.run_count() - 1;
  std::string html = "<section id=\"maps\"><h2>Head map of each run</h2><p class=\"note\">Colour: primary label; a "
                     "ringed cell changed its primary label since the run before. Move the slider to go through the "
                     "runs; click a head for its page in that run's report.</p>";
  html += fmt::format("<div class=\"runslider\"><input type=\"range\" id=\"run-slider\" min=\"0\" max=\"{0}\" step=\"1\" "
                      "value=\"{0}\" aria-label=\"run\"><span id=\"run-caption\">{1}</span></div>",
                      last, escape_html(run_title(comparison.runs[last])));
  const bool small = comparison.heads > 24;
  for (std::size_t run = 0; run < view.run_count(); ++run) {
    html += fmt::format("<div class=\"runmap\" data-run=\"{}\"{}><div class=\"grid headmap\" style=\"grid-template-columns: "
                        "3.2em repeat({}, {})\"><div></div>",
                        run, run == last ? "" : " hidden", comparison.heads, small ? "22px" : "minmax(30px, 52px)");
    for (int head = 0; head < comparison.heads; ++head) html += fmt::format("<div class=\"axis\">{}</div>", head);
    for (int layer = 0; layer < comparison.layers; ++layer) {
      html += fmt::format("<div class=\"axis row\">L{}</div>", comparison.model_layer(layer));
      for (int head = 0; head < comparison.heads; ++head) {
        const HeadInfo& info = view.runs[run].at(layer, head);
        const bool changed = run > 0 && view.runs[run - 1].at(layer, head).primary != info.primary;
        const Rgb fill = label_colour(info.primary);
        std::string tag = small ? "" : escape_html(label_tag(info.primary));
        if (!small && info.labels.size() > 1) tag += "+";
        std::string title = fmt::format("{}: {}", info.id(), info.labels.empty() ? "no label" : fmt::format("{}", fmt::join(info.labels, ", ")));
        if (changed) title += fmt::format(" (was {})", view.runs[run - 1].at(layer, head).primary);
        const std::string attributes = fmt::format(
            "class=\"cell{}\" title=\"{}\" style=\"background:{};color:{}\"", changed ? " changed" : "", escape_html(title),
            to_hex(fill), to_hex(text_colour_on(fill)));
        if (links[run].empty()) {
          html += fmt::format("<span {}>{}</span>", attributes, tag);
        } else {
          html += fmt::format("<a href=\"{}heads/{}.html\" {}>{}</a>", links[run], info.id(), attributes, tag);
        }
      }
    }
    html += "</div>";
    if (options.head_plots) html += fmt::format("<p class=\"note\">As PNG: <a href=\"plots/heads_{0}.png\">plots/heads_{0}.png</a></p>", run);
    html += "</div>";
  }
  return html + label_legend(report_labels()) + "</section>\n";
}

std::string changes_table(const Comparison& comparison, const std::vector<LabelChange>& changes, const char* id) {
  if (changes.empty()) return "<p class=\"note\">No head changed its labels.</p>";
  std::string html = fmt::format("<div class=\"table-wrap\"><table class=\"data sortable\" id=\"{}\"><thead><tr><th>head</th>"
                                 "<th>from</th><th>to</th><th>primary before</th><th>primary after</th><th>labels added</th>"
                                 "<th>labels removed</th></tr></thead><tbody>",
                                 id);
  for (const LabelChange& change : changes) {
    std::string added, removed;
    for (const std::string& label : change.added) added += label_badge(label);
    for (const std::string& label : change.removed) removed += label_badge(label);
    html += fmt::format("<tr><td data-sort=\"{}\">{}</td><td data-sort=\"{}\">{}</td><td data-sort=\"{}\">{}</td><td>{}</td>"
                        "<td>{}</td><td>{}</td><td>{}</td></tr>",
                        change.layer * comparison.heads + change.head, head_id(comparison.model_layer(change.layer), change.head), change.from,
                        escape_html(run_title(comparison.runs[change.from])), change.to,
                        escape_html(run_title(comparison.runs[change.to])), label_badge(change.primary_before),
                        label_badge(change.primary_after), added, removed);
  }
  return html + "</tbody></table></div>";
}

std::string changes_section(const CompareView& view) {
  const Comparison& comparison = *view.comparison;
  std::string html = "<section id=\"changes\"><h2>Label changes</h2>";
  if (view.run_count() < 2) return html + "<p class=\"note\">One run: nothing to compare.</p></section>\n";
  html += "<h3>Between consecutive runs</h3>" + changes_table(comparison, consecutive_label_changes(comparison), "changes-table");
  if (view.run_count() > 2) {
    html += fmt::format("<h3>From the first run ({}) to the last ({})</h3>", escape_html(run_title(comparison.runs.front())),
                        escape_html(run_title(comparison.runs.back())));
    html += changes_table(comparison, overall_label_changes(comparison), "overall-changes-table");
  }
  return html + "</section>\n";
}

std::string diff_section(const CompareView& view, const CompareReportOptions& options) {
  const Comparison& comparison = *view.comparison;
  if (view.run_count() < 2 || view.diffs.empty()) return "";
  const std::string first = escape_html(run_title(comparison.runs.front()));
  const std::string last = escape_html(run_title(comparison.runs.back()));
  std::string html = fmt::format("<section id=\"diff\"><h2>What changed from {} to {}</h2><p class=\"note\">Each score of "
                                 "the last run minus the first, per head: red where it rose, blue where it fell, white "
                                 "where it stayed (the scale runs to the largest change); hatched: no value. The table "
                                 "lists every score: click a column to sort.</p><div class=\"scoremaps\">",
                                 first, last);
  const std::string cell = comparison.heads > 24 ? "10px" : (comparison.heads > 8 ? "18px" : "26px");
  for (const Trajectory& trajectory : view.trajectories) {
    const ScoreDiff* diff = view.diff(trajectory.name);
    if (!diff) continue;
    const double largest = diff->largest > 0 ? diff->largest : 1;
    html += fmt::format("<div class=\"scoremap\"><h3>{}</h3><div class=\"grid\" style=\"grid-template-columns: 3.2em "
                        "repeat({}, {})\"><div></div>",
                        escape_html(diff->name), comparison.heads, cell);
    for (int head = 0; head < comparison.heads; ++head) html += fmt::format("<div class=\"axis\">{}</div>", head);
    for (int layer = 0; layer < comparison.layers; ++layer) {
      html += fmt::format("<div class=\"axis row\">{}</div>", comparison.model_layer(layer));
      for (int head = 0; head < comparison.heads; ++head) {
        const auto& change = diff->change[static_cast<std::size_t>(layer) * static_cast<std::size_t>(comparison.heads) +
                                          static_cast<std::size_t>(head)];
        if (change) {
          html += fmt::format("<span title=\"{}: {}\" style=\"background:{}\"></span>", head_id(comparison.model_layer(layer), head),
                              signed_text(change, 3), to_hex(diverging((*change / largest + 1) / 2)));
        } else {
          html += fmt::format("<span class=\"missing\" title=\"{}: no value\"></span>", head_id(comparison.model_layer(layer), head));
        }
      }
    }
    html += fmt::format("</div><div class=\"scale\">{}<span class=\"bar\" style=\"background:linear-gradient(to right",
                        signed_text(-largest));
    for (int i = 0; i <= 8; ++i) html += "," + to_hex(diverging(i / 8.0));
    html += fmt::format(")\"></span>{}", signed_text(largest));
    if (options.head_plots) html += fmt::format(" · <a href=\"plots/{}\">PNG</a>", trajectory.diff_plot_file);
    html += "</div></div>";
  }
  html += "</div><div class=\"table-wrap\"><table class=\"data sortable\" id=\"diff-table\"><thead><tr><th>head</th>"
          "<th>primary, first</th><th>primary, last</th>";
  for (const ScoreDiff& diff : view.diffs) {
    html += fmt::format("<th data-score=\"{0}\" title=\"{1}\">Δ {0}</th>", escape_html(diff.name), escape_html(diff.meaning));
  }
  html += "</tr></thead><tbody>";
  for (int layer = 0; layer < comparison.layers; ++layer) {
    for (int head = 0; head < comparison.heads; ++head) {
      const std::size_t index = static_cast<std::size_t>(layer) * static_cast<std::size_t>(comparison.heads) +
                                static_cast<std::size_t>(head);
      html += fmt::format("<tr><td data-sort=\"{}\">{}</td><td>{}</td><td>{}</td>", index, head_id(comparison.model_layer(layer), head),
                          label_badge(view.runs.front().at(layer, head).primary),
                          label_badge(view.runs.back().at(layer, head).primary));
      for (const ScoreDiff& diff : view.diffs) {
        html += fmt::format("<td class=\"num\" data-sort=\"{}\">{}</td>", sort_value(diff.change[index]),
                            signed_text(diff.change[index], 3));
      }
      html += "</tr>";
    }
  }
  return html + "</tbody></table></div></section>\n";
}

}  // namespace

void write_compare_page(const std::filesystem::path& directory, const CompareView& view,
                        const CompareReportOptions& options) {
  const Comparison& comparison = *view.comparison;
  std::vector<std::string> links;
  for (const CompareRun& run : comparison.runs) links.push_back(run_report_link(run, options.target));
  const std::string title = fmt::format("Comparison of {} run{}", view.run_count(), view.run_count() == 1 ? "" : "s");
  std::string html = page_start("headscan · " + title);
  html += fmt::format("<header class=\"top\"><h1>{}</h1><div class=\"sub\">headscan compare: the heads of {} across {}</div>"
                      "</header>",
                      escape_html(title), fmt::format("{} layers × {} heads", comparison.layers, comparison.heads),
                      comparison.order == RunOrder::given ? "the runs given" : "training steps");
  html += "<nav class=\"sections\"><a href=\"#runs\">Runs</a><a href=\"#phase\">Phase change</a><a href=\"#trajectories\">"
          "Scores across runs</a><a href=\"#maps\">Head maps</a><a href=\"#changes\">Label changes</a>";
  if (view.run_count() >= 2 && !view.diffs.empty()) html += "<a href=\"#diff\">First vs last</a>";
  html += "<a href=\"compare.json\">compare.json</a><a href=\"compare.csv\">compare.csv</a></nav><main>";
  Json head_info = Json::array();
  std::size_t phase_points = 0;
  html += runs_section(view, links);
  html += phase_section(view, options, phase_points);
  html += trajectories_section(view, options, head_info);
  html += maps_section(view, options, links);
  html += changes_section(view);
  html += diff_section(view, options);
  html += "</main>";
  Json runs = Json::array();
  for (const CompareRun& run : comparison.runs) runs.push_back(valid_utf8(run_title(run)));
  Json scores = Json::array();
  for (const Trajectory& trajectory : view.trajectories) scores.push_back(valid_utf8(trajectory.name));
  const Json config = {{"page", "compare"},     {"root", ""},
                       {"layers", comparison.layers}, {"heads", comparison.heads},
                       {"runs", runs},          {"scores", scores},
                       {"changedHeads", view.changed_heads}, {"phasePoints", phase_points},
                       {"examples", 0},         {"headInfo", head_info}};
  html += page_end(config, compare_script());
  write_text_file(directory / "index.html", html);
}

}  // namespace headscan
