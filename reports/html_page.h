#pragma once
// The parts every page shares: the document shell (inline CSS and JS, a Content-Security-Policy
// that allows no network), label badges and the legend.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "reports/attention_data.h"
#include "reports/report_data.h"

namespace headscan {

// What the pages of one report link to besides themselves.
struct ReportContents {
  bool plots = false;                    // plots/*.png exist
  bool induction_plot = false;           // plots/induction.png exists
  bool pruning_plot = false;             // plots/pruning.png exists (--ablation)
  std::size_t attention_plots = 0;       // plots/attention/L{l}H{h}_<k>.png for k < this
  ViewerSelection viewer;                // which examples data/*.js holds
};

// <!DOCTYPE html> … <body>; `title` is escaped here.
std::string page_start(const std::string& title);
// The tooltip element, `config` as JSON for the script, the script (report_script() unless
// given), </body></html>.
std::string page_end(const nlohmann::ordered_json& config, const char* script = nullptr);

std::string label_badge(const std::string& label);
std::string label_legend(const std::vector<std::string>& labels);

// What a head's tooltip lists: {"id", "labels", "scores": [[name, text], …]}.
nlohmann::ordered_json head_summary(const ReportData& data, const HeadInfo& info);

// The colour stops of attention weights, for the script.
nlohmann::ordered_json attention_stop_list();

// Any JSON value as escaped HTML text: strings as they are, numbers with up to 4 decimals,
// booleans yes/no, null "—", arrays as "a, b", objects as "key: value, …".
std::string json_value_html(const nlohmann::ordered_json& value);

}  // namespace headscan
