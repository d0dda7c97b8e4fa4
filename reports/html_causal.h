#pragma once
// The causal evidence of --ablation in the HTML pages (DESIGN.md, "Causal evidence"): the head
// map's colour switch, the pruning figure of index.html and the "Causal evidence" section of a
// head's page. Without --ablation every function here returns "" and the pages are as before.

#include <string>

#include "reports/html_page.h"
#include "reports/report_data.h"

namespace headscan {

// The head map's switch between the primary label and the causal scores (importance, ablation
// effect), or "" when heads.json has neither.
std::string map_colour_switch(const ReportData& data);
// Attributes of a head map cell with its colour under each setting of the switch (or "").
std::string map_cell_colours(const ReportData& data, const HeadInfo& info);
// The legends of the causal settings, hidden until chosen (or "").
std::string map_colour_legends(const ReportData& data);

// index.html: the ablation run and the pruning figure (inline SVG), or "" without --ablation.
std::string causal_index_section(const ReportData& data, const ReportContents& contents);

// The pruning curves as inline SVG: one <circle class="point importance"> and one
// <circle class="point random"> per pruning point that has that loss.
std::string pruning_svg(const AblationSummary& ablation);

// A head's page: importance and ablation effect with their ranks, what the head depends on and
// what depends on it; "" when heads.json has no causal evidence.
std::string causal_head_section(const ReportData& data, const HeadInfo& info);

}  // namespace headscan
