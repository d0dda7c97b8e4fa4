#pragma once
// The extra files of a TorchScript archive (tokenizer.json, headscan.json), read without loading
// or instrumenting the model: `headscan tokenize MODEL.pt` needs only these. LibTorch stays out of
// this header.

#include <string>

#include "analyzer/model/model.h"

namespace headscan {

struct ModelArchiveExtras {
  std::string tokenizer_json;  // extra/tokenizer.json; empty if absent
  std::string headscan_json;   // extra/headscan.json; empty if absent
};

// Reads the extra files of the archive at `path` (torch.jit.save(m, path, _extra_files=…)).
// Throws InputError when the file is missing or is not a TorchScript (zip) archive.
ModelArchiveExtras read_model_extras(const std::string& path);

}  // namespace headscan
