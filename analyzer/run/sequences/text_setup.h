#pragma once
// The tokenizer, BOS, template suffix and max_length of a run, resolved in one place for every
// command, so that `headscan tokenize` shows exactly the sequences the analysis builds.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/model/model.h"
#include "analyzer/run/sequences/sequences.h"
#include "analyzer/tokenizers/tokenizer.h"

namespace headscan {

// max_length when neither --max-length nor headscan.json gives one.
constexpr std::int64_t kDefaultMaxLength = 512;

// Where the tokenizer and metadata come from.
struct TextSources {
  std::string tokenizer_path;         // --tokenizer FILE; empty: the model's own tokenizer.json
  std::string model_path;             // the model archive; empty: none (tokenize --tokenizer FILE)
  std::string embedded_tokenizer;     // the archive's tokenizer.json text; empty if absent
  const ModelMetadata* metadata = nullptr;  // the archive's headscan.json; null: none
  std::int64_t max_length = 0;        // --max-length; 0: headscan.json's, else kDefaultMaxLength
};

struct TextSetup {
  std::unique_ptr<Tokenizer> tokenizer;
  std::string tokenizer_description;  // e.g. "WordLevel, 64 tokens (model.pt:tokenizer.json)"
  std::optional<BosChoice> bos;       // prepended to every window when set
  SequenceShape shape;                // BOS id, max_length and the template's suffix
  std::vector<std::string> warnings;  // e.g. max_length fell back to the default
};

// Throws InputError when there is no tokenizer, it is malformed, max_length is below 2, or BOS and
// the template's suffix leave no room for text in max_length.
TextSetup resolve_text_setup(const TextSources& sources);

// The text setup of the commands that need no model run (tokenize, idf): the archive's extra files
// read without LibTorch (none when `model_path` is empty), then resolve_text_setup().
TextSetup load_text_setup(const std::string& model_path, const std::string& tokenizer_path, std::int64_t max_length);

}  // namespace headscan
