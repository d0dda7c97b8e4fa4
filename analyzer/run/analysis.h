#pragma once
// The library's entry point: analyse a model over a corpus and write the report directory.
// The command line fills AnalysisOptions and calls run_analysis(); nothing here prints to stdout.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/corpus/text_lines.h"

namespace headscan {

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
  std::int64_t max_sequences = 0;         // 0: the whole corpus
  std::uint64_t seed = 0;                 // for probe sequences
  std::map<std::string, double> thresholds;  // overrides by name
  bool ablation = false;                  // the causal passes (importance, ablation, pruning, circuits)
  std::int64_t ablation_sequences = 32;   // the first N sequences of the corpus are the ablation set
  // --shard I/N: analyse the I-th of N slices of the corpus and write the shard's state for
  // `headscan merge` (analyzer/run/shard_state.h) instead of a report.
  std::optional<CorpusSlice> shard;
  bool progress = true;                   // progress on stderr
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
AnalysisSummary run_analysis(const AnalysisOptions& options);

}  // namespace headscan
