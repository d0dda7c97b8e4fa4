#pragma once
// `headscan compare RUN... -o OUT`: reports side by side (reports/compare_data.h): compare.json,
// compare.csv and the compare report (reports/compare_report.h).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

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

// One run of a comparison for a front end that holds reports in memory (the Python module): the
// text of its heads.json, or nothing to read options.runs' entry (a directory or heads.json).
struct CompareInput {
  std::string given;                  // a path, or the report's name in messages and titles
  std::optional<std::string> heads_json;
};

// A comparison in memory: compare.json's document and what its report is drawn from.
class CompareResult {
 public:
  const nlohmann::ordered_json& document() const;  // compare.json
  std::string csv() const;                          // compare.csv
  const CompareSummary& summary() const;            // output_dir empty until saved

  struct Impl;
  explicit CompareResult(std::shared_ptr<Impl> impl);

 private:
  friend CompareSummary save_compare(const CompareResult& result, const std::string& output_dir, bool force,
                                     bool html, bool plots);
  std::shared_ptr<Impl> impl_;
};

// run_compare without writing: `inputs` replace options.runs. Throws as run_compare does.
CompareResult compare(const CompareOptions& options, const std::vector<CompareInput>& inputs);

// Writes compare.json, compare.csv and the report (html, plots) into `output_dir` as run_compare
// does; InputError when the directory holds something else or one of the runs.
CompareSummary save_compare(const CompareResult& result, const std::string& output_dir, bool force, bool html,
                            bool plots);

}  // namespace headscan
