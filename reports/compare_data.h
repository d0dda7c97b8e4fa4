#pragma once
// `headscan compare RUN...`: reports side by side, the checkpoints of one training run ordered by
// step or a base model and its fine-tuned version. Here the runs' heads.json files are read and
// checked and ordered (compare_data.cpp), and turned into compare.json and compare.csv
// (compare_tables.cpp); without LibTorch or cairo, so that the reader can be fuzzed
// (tests/fuzz/fuzz_compare_run.cpp). The pages and plots are reports/compare_report.h.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/model/model_layers.h"

namespace headscan {

// Bounds on a run read from a file the user names: a heads.json larger than this, or with more
// heads or distinct score names, is refused (exit 2) rather than filling the memory.
constexpr std::uintmax_t kMaxCompareRunBytes = std::uintmax_t{1} << 30;
constexpr std::int64_t kMaxCompareHeads = std::int64_t{1} << 20;
constexpr std::size_t kMaxCompareScores = 256;
constexpr std::size_t kMaxCompareColumns = 4096;        // of compare.csv: score names and their members
constexpr std::size_t kMaxCompareLabels = 64;           // per head (headscan has 9 labels)
constexpr double kMaxCompareLoss = 1e6;                 // |repeat_loss| in nats (real ones are below 20)

struct CompareRun {
  std::string given;  // the argument as given: a report directory or its heads.json
  std::string path;   // the heads.json read
  std::string name;   // the report directory's name; its path when two runs share a name
  std::optional<std::int64_t> step;  // model.step of heads.json, or from --steps
  std::string title;  // "step 1500" when the runs are in order of step, else the name
  int layers = 0;  // attention maps
  int heads = 0;
  LayerNumbering numbering;  // model.layers: the model's index of each map, when known
  // heads.json, checked: "model" an object; "heads" one object per head in layer-major order, each
  // with integer layer, head and kv_group, a string primary, an array of string labels and an
  // object of scores.
  nlohmann::ordered_json document;

  const nlohmann::ordered_json& head(int layer, int head_index) const {
    return document["heads"][static_cast<std::size_t>(layer) * static_cast<std::size_t>(heads) +
                             static_cast<std::size_t>(head_index)];
  }
};

// One run from the text of its heads.json; `origin` names it in messages. Throws InputError (what
// is wrong, where, what to do) for anything but a headscan report.
CompareRun parse_compare_run(const std::string& text, const std::string& origin);

// RUN: a report directory (its heads.json is read) or a heads.json file. Throws InputError.
CompareRun read_compare_run(const std::string& run);

// How the runs were put in order.
enum class RunOrder {
  step,   // by model.step, which every run has
  given,  // as given on the command line (some run has no step)
  steps,  // by the steps of --steps
};

struct Comparison {
  std::vector<CompareRun> runs;  // in order
  RunOrder order = RunOrder::given;
  int layers = 0;  // attention maps: heads are indexed by map, named by the model's index
  int heads = 0;
  LayerNumbering numbering;  // the runs' model.layers (one numbering for all)

  int model_layer(int map) const { return numbering.model_index(map); }
  std::vector<std::string> score_names;  // every score of any run: the first run's order, then new ones
  std::vector<std::string> warnings;
};

// Checks that the runs are of one shape (InputError naming both shapes otherwise; also for a run
// given twice), names them and puts them in order: by `steps` (one per run, in the order given)
// when not empty, else by model.step when every run has one, else as given.
Comparison make_comparison(std::vector<CompareRun> runs, const std::vector<std::int64_t>& steps);

// What the phase-change figure shows of one run.
struct RunFindings {
  std::optional<double> best_induction;  // the largest "induction" score over heads
  int best_layer = 0;                    // … and its head
  int best_head = 0;
  std::vector<double> repeat_loss;        // model.repeat_loss: mean loss on repeats 1..4 of the probes
  std::optional<double> in_context_gap;   // repeat 1 minus the mean of the later repeats (nats)
  std::optional<double> loss;             // ablation.loss: the mean corpus loss (--ablation)
};
RunFindings run_findings(const CompareRun& run);

// The first run (index) at which the best induction score exceeds 0.5, and the first at which the
// in-context-learning gap reaches 1 nat (Olsson et al. 2022): where the phase change shows.
constexpr double kInductionFormed = 0.5;
constexpr double kInContextGapFormed = 1.0;
struct PhaseChange {
  std::optional<std::size_t> induction_run;
  std::optional<std::size_t> gap_run;
};
PhaseChange phase_change(const std::vector<RunFindings>& findings);

// A head whose labels differ between two runs.
struct LabelChange {
  int layer = 0;
  int head = 0;
  std::size_t from = 0;  // run indices
  std::size_t to = 0;
  std::string primary_before;
  std::string primary_after;
  std::vector<std::string> added;    // labels of `to` that `from` does not have
  std::vector<std::string> removed;  // … and the other way round
};
// Between consecutive runs, in run then head order.
std::vector<LabelChange> consecutive_label_changes(const Comparison& comparison);
// Between the first and the last run (empty with one run).
std::vector<LabelChange> overall_label_changes(const Comparison& comparison);

// Whether a head's primary label is not the same in every run.
bool primary_changed(const Comparison& comparison, int layer, int head);

// The value of a score that stands for it on a trajectory: a number as it is; `weight` of an
// object that has one (positional); the best accuracy − baseline of a relation table (syntactic).
std::optional<double> trajectory_value(const nlohmann::ordered_json* value);

// A head's score in one run, or null when the run has none.
const nlohmann::ordered_json* run_score(const CompareRun& run, int layer, int head, const std::string& name);

// compare.json: {"format": "headscan-compare", "version": 1, "headscan_version", "order", "shape":
// {"layers", "heads"}, "score_names", "runs": [{"path", "name", "step", "model", "repeat_loss", "loss",
// "in_context_gap", "best_induction", "primary_counts", "ablation"?}], "phase_change", "heads":
// [{"layer", "head", "scores": {name: [one value per run, null where a run has none]}, "labels",
// "primary", "primary_changed", "circuit"?}], "label_changes": {"consecutive", "first_to_last"},
// "warnings"}.
nlohmann::ordered_json compare_json(const Comparison& comparison);

// compare.csv: one row per (run, head): run (from 0), run_name, step, then the columns of
// heads.csv (reports/heads_csv.h) over the score columns of every run. RFC 4180, CRLF.
std::string compare_csv(const Comparison& comparison);

// The run's title, for axes and tables: "step 1500" when the runs are in order of step, else its
// name.
inline const std::string& run_title(const CompareRun& run) { return run.title; }

}  // namespace headscan
