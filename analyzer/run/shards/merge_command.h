#pragma once
// `headscan merge DIR... -o OUT`: the shards of one run (--shard I/N) combined into the report the
// run would have written in one process (analyzer/run/shards/shard_state.h).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace headscan {

struct MergeOptions {
  std::vector<std::string> shard_directories;
  std::string output_dir = "headscan-report";
  std::map<std::string, double> thresholds;  // overrides of the shards' thresholds, by name
  bool force = false;
  bool html = true;
  bool plots = true;
};

struct MergeSummary {
  std::string output_dir;
  std::size_t shards = 0;
  int layers = 0;
  int heads = 0;
  std::int64_t sequences = 0;
  std::int64_t tokens = 0;
  double shard_seconds = 0;  // the shards' time, added up
  double seconds = 0;        // the merge's
  std::map<std::string, int> label_counts;
  std::vector<std::string> warnings;
};

// Throws InputError (exit 2) for shards that are damaged, missing, given twice or of different
// runs; nothing is written then.
MergeSummary run_merge(const MergeOptions& options);

}  // namespace headscan
