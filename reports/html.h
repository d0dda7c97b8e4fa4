#pragma once
// The HTML pages: index.html and heads/L{l}H{h}.html (DESIGN.md, "Reports").

#include <filesystem>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "reports/html_page.h"
#include "reports/report_data.h"
#include "reports/report_writer.h"

namespace headscan {

// Model and corpus summary, head map, label counts per layer, sortable table of heads, score
// heatmaps, per-layer plot and the attention viewer.
void write_index_page(const std::filesystem::path& directory, const nlohmann::ordered_json& document,
                      const ReportData& data, const ReportContents& contents);

// The page of one head, heads/L{l}H{h}.html: labels and scores with their evidence, attention
// heatmaps, the probe stripe, the interactive viewer fixed to the head, and its most confident
// queries.
std::string head_page(const nlohmann::ordered_json& document, const ReportData& data, const HeadInfo& info,
                      const std::vector<ExampleSequence>& examples, const std::vector<ExampleSequence>& probes,
                      const ReportContents& contents);

// The viewer's markup; `fixed_head` hides the layer and head pickers (head pages).
std::string viewer_html(const ReportData& data, bool fixed_head);

}  // namespace headscan
