#pragma once
// `headscan compare RUN... -o OUT`: reports side by side (reports/compare_data.h): compare.json,
// compare.csv and the compare report (reports/compare_report.h).

#include <cstdint>
#include <string>
#include <vector>

namespace headscan {

struct CompareOptions {
  std::vector<std::string> runs;     // report directories or heads.json files
  std::string output_dir = "headscan-compare";
  std::vector<std::string> scores;   // --scores: the small multiples' and diff maps' scores
  std::vector<std::int64_t> steps;   // --steps: one per run, in the order given
  bool force = false;
  bool html = true;
  bool plots = true;
};

struct CompareSummary {
  std::string output_dir;
  std::size_t runs = 0;
  int layers = 0;
  int heads = 0;
  std::vector<std::string> order;  // the runs' titles, in order
  std::string induction_formed;    // the run where the best induction score first exceeds 0.5, or ""
  std::string gap_formed;          // the run where the in-context-learning gap first reaches 1 nat, or ""
  std::size_t changed_heads = 0;   // heads whose primary label is not the same in every run
  double seconds = 0;
  std::vector<std::string> warnings;
};

// Throws InputError (exit 2) for runs that are not reports, of different shapes, given twice, or
// options that do not fit them; nothing is written then.
CompareSummary run_compare(const CompareOptions& options);

}  // namespace headscan
