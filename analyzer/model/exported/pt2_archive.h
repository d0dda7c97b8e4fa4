#pragma once
// An exported program's archive (the .pt2 zip torch.export's package_pt2 writes, as `headscan
// export` does), read and checked without LibTorch. NativeRT trusts the archive: it reads each
// weight's sizes and strides from models/model.json and never compares them with the record that
// holds the bytes (a short record is read out of bounds; an empty one becomes a weight with no
// data), and it reads every record whole. headscan checks these before NativeRT opens the archive
// (README, "Trust model"), and reads what the run needs of the program: its inputs, its attention
// observers, the dtype and device of its weights.

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/model/model_zip.h"

namespace headscan {

// What the messages say was expected of an exported program, and what to do about a damaged one.
inline constexpr const char* kExportedExpected =
    "an exported program (a .pt2 archive written by headscan export or torch.export's package_pt2)";
inline constexpr const char* kExportProgramAgain = "export the model again with headscan export";
// The bound on models/model.json and the weights' config records.
inline constexpr std::uint64_t kMaxProgramBytes = 256ull << 20;

// The program beside "model" that ends at the model's last attention map (headscan export writes
// it: analyzer/python/headscan/_export/attention_program.py), which the corpus pass runs.
inline constexpr const char* kAttentionProgram = "attention";

// The program headscan runs: the model "model" of the archive.
struct ExportedProgramInfo {
  std::vector<std::string> inputs;   // the forward's inputs, in order ("input_ids", "attention_mask")
  int observers = 0;                 // headscan::observe nodes: observed attention softmaxes
  int attention = 0;                 // headscan::attention nodes: attention in its eager form
  std::vector<std::string> operators;  // every operator the graph calls, "aten::softmax.int", once each
  std::string dtype;   // the dtype of most floating-point weight elements ("float32"; float32 if none)
  std::string device;  // where its weights live ("cpu", "cuda:0")
  // Whether the archive holds kAttentionProgram, checked as "model" is, with the same inputs and
  // observers.
  bool attention_program = false;
};

// Whether the zip is a .pt2 package: its archive_format record says "pt2".
bool is_pt2_archive(const ModelZip& zip);

// Checks the archive for NativeRT (archive_format, models/model.json and models/attention.json
// where present, every weight and constant record holding exactly the bytes its tensors read, every
// other record within its bound: extra/headscan.json, extra/tokenizer.json, the programs and their
// configs, 16 MiB for anything else) and reads the program's inputs, observers, dtype and device. Throws InputError naming the
// archive, the record and what to do.
ExportedProgramInfo check_pt2_archive(const ModelZip& zip);

}  // namespace headscan
