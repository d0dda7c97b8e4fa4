#pragma once
// The extra files of a model archive (tokenizer.json, headscan.json), read without loading or
// instrumenting the model: `headscan tokenize MODEL.pt` needs only these. Both formats, TorchScript
// and .pt2, keep them in extra/. LibTorch stays out of this header.

#include <string>

#include "analyzer/model/model.h"

namespace headscan {

struct ModelArchiveExtras {
  std::string tokenizer_json;  // extra/tokenizer.json; empty if absent
  std::string headscan_json;   // extra/headscan.json; empty if absent
};

// Reads the extra files of the archive at `path` (torch.jit.save(m, path, _extra_files=…), or a .pt2).
// Throws InputError when the file is missing or is not a model (zip) archive.
ModelArchiveExtras read_model_extras(const std::string& path);

}  // namespace headscan
