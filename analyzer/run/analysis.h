#pragma once
// The library's entry points: analyse a model over a corpus and write the report directory.
// The command line fills AnalysisOptions and calls run_analysis(); the Python module calls scan()
// and, for Report.save(), save_report(), the two halves of run_analysis(). Nothing here prints to
// stdout.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyzer/corpus/text_lines.h"
#include "analyzer/run/sequences/probe_budget.h"

namespace headscan {

// How far the corpus pass has got, for a front end that draws its own progress (the Python
// module's tqdm bar). Called after every batch and once more at the end (`final`).
struct ProgressUpdate {
  std::uint64_t done = 0;   // work done so far, in `unit`
  std::uint64_t total = 0;  // the work of the pass, in `unit`; 0 when unknown
  std::uint64_t tokens = 0; // tokens analysed so far
  // "bytes" (of the corpus file) or "sequences" (with max_sequences, or a corpus of unknown size)
  const char* unit = "";
  bool final = false;
};

struct AnalysisOptions {
  std::string model_path;
  std::string corpus_path;
  std::string output_dir = "headscan-report";
  std::string tokenizer_path;             // overrides the tokenizer.json inside the model
  std::string idf_path;                   // document frequencies of a reference corpus (--idf)
  std::string examples_path;              // --examples: the report's example sequences, one per line
  std::string parser = "link-grammar";    // dependency parser for plain text: "link-grammar" or "none"
  std::string text_field = "text";        // the document's field in a JSON Lines (.jsonl) corpus
  std::string dtype;                      // --dtype: float32, bfloat16 or float16; empty: the archive's own
  std::string device = "auto";            // --device: auto, cpu, cuda or cuda:N (analyzer/model/device.h)
  bool force = false;                     // replace a non-empty output directory
  int threads = 0;                        // 0: LibTorch's default
  std::int64_t batch_size = 8;            // sequences per forward call
  std::int64_t max_length = 0;            // 0: headscan.json's max_length, else 512
  // --attention-block: at most this many query rows per block of headscan's attention op
  // (InstrumentedModel::set_attention_block); 0 ("auto"): planned from the device's free memory.
  std::int64_t attention_block = 0;
  // --needle-lengths: the needle probes' lengths, ascending and distinct; empty: 4096, 8192, …
  // doubling up to max_length, and max_length (analyzer/run/sequences/needles.h).
  std::vector<std::int64_t> needle_lengths;
  // --probes: the induction and needle probes of each kind (probe_budget.h); 0 leaves that kind's
  // pass out of the run.
  ProbeBudget probes;
  std::int64_t max_sequences = 0;         // 0: the whole corpus
  std::uint64_t seed = 0;                 // for probe sequences
  std::map<std::string, double> thresholds;  // overrides by name
  bool ablation = false;                  // the causal passes (importance, ablation, pruning, circuits)
  std::int64_t ablation_sequences = 32;   // the first N sequences of the corpus are the ablation set
  // --shard I/N: analyse the I-th of N slices of the corpus and write the shard's state for
  // `headscan merge` (analyzer/run/shards/shard_state.h) instead of a report.
  std::optional<CorpusSlice> shard;
  bool progress = true;                   // progress on stderr (or through on_progress)
  // For front ends other than the command line. A model or corpus given otherwise than as a file
  // (a live module, a list of strings) reaches the run as a temporary file: `model_name` and
  // `corpus_name` stand for it in heads.json and in every message (empty: the path itself).
  std::string model_name;
  std::string corpus_name;
  std::function<void(const ProgressUpdate&)> on_progress;  // set: progress goes here, not to stderr
  // Called before every forward call (of every pass, the causal ones and the example captures
  // included) and every corpus document; throws Interrupted (errors.h) to stop the run, which
  // then ends with that exception and writes nothing.
  std::function<void()> check_interrupt;
  bool html = true;                       // index.html and per-head pages
  bool plots = true;                      // PNG plots
};

struct AnalysisSummary {
  std::string output_dir;
  int layers = 0;
  int heads = 0;
  std::int64_t sequences = 0;
  std::int64_t tokens = 0;
  double seconds = 0;
  std::map<std::string, int> label_counts;  // primary label → heads
  std::vector<std::string> findings;        // --ablation: what the causal passes found, one line each
  std::vector<std::string> warnings;
  bool shard_state = false;  // --shard: output_dir holds a shard's state, not a report
};

// Throws InputError for bad input (exit 2) and other exceptions for failures while running.
// scan() and save_report() in a row; with options.shard, the shard's state instead of a report.
AnalysisSummary run_analysis(const AnalysisOptions& options);

// Where save_report() writes a report, and which parts (--no-html, --no-plots).
struct ReportTarget {
  std::string output_dir = "headscan-report";
  bool force = false;  // replace an earlier report there (never the user's other files)
  bool html = true;
  bool plots = true;
};

// A finished analysis in memory: heads.json's document and what the report's pages and plots are
// drawn from. The model is released; copies share one state.
class ScanResult {
 public:
  // heads.json; its "run" has no "reports" phase yet: save_report() adds it to the file it writes.
  const nlohmann::ordered_json& document() const;
  // heads.csv's text (reports/heads_csv.h).
  std::string heads_csv() const;
  // The run's numbers and warnings, as run_analysis returns them (output_dir empty until saved).
  const AnalysisSummary& summary() const;

  struct Impl;
  explicit ScanResult(std::shared_ptr<Impl> impl);

 private:
  friend AnalysisSummary save_report(const ScanResult& result, const ReportTarget& target);
  std::shared_ptr<Impl> impl_;
};

// The analysis without its report: options.output_dir, force, html, plots and shard are not read
// (the example sequences the pages draw are kept either way). Throws as run_analysis does.
ScanResult scan(const AnalysisOptions& options);

// Writes the report directory of `result` (heads.json, heads.csv, idf.txt, kv_plan/, the HTML
// pages and PNG plots) exactly as run_analysis does, into a staging directory swapped into place
// (analyzer/run/output/output_dir.h): InputError when the target holds something else or one of the
// run's inputs. Returns the summary with output_dir set and the directory's notes as warnings.
AnalysisSummary save_report(const ScanResult& result, const ReportTarget& target);

}  // namespace headscan
