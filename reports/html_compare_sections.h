#pragma once
// The compare index's pieces shared by reports/html_compare.cpp and the charts it draws
// (reports/html_compare_charts.cpp).

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "reports/compare_report.h"

namespace headscan {

// "L3H5".
std::string head_id(int layer, int head);
// "none → previous-token → induction": the primary labels a head went through.
std::string primary_path(const Comparison& comparison, int layer, int head);

// The phase-change section: best induction score and in-context-learning gap against step, as SVG
// (PNG beside it with plots); `points` counts the SVG's points.
std::string phase_section(const CompareView& view, const CompareReportOptions& options, std::size_t& points);
// The small multiples of each chosen score; each chart's numbers go to `head_info` for hover.
std::string trajectories_section(const CompareView& view, const CompareReportOptions& options,
                                 nlohmann::ordered_json& head_info);

}  // namespace headscan
