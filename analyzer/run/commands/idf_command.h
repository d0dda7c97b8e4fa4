#pragma once
// `headscan idf`: the document frequencies of a corpus, computed once, in the idf.txt format that
// --idf reads (analyzer/corpus/document_frequencies.h). A large corpus analysed in parts (shards),
// or several runs over one reference corpus, then count it once instead of every time.

#include <cstdint>
#include <string>
#include <vector>

namespace headscan {

struct IdfOptions {
  std::string model_path;      // MODEL.pt: its tokenizer.json (and headscan.json)
  std::string tokenizer_path;  // tokenizer.json or .model; overrides the model's tokenizer
  std::string corpus_path;     // text (one document per line), .jsonl or .conllu (one per sentence)
  std::string text_field = "text";  // the document's field in a JSON Lines corpus
  std::string output_path;     // the idf file to write
  std::int64_t max_length = 0; // tokens per window, BOS included; 0: headscan.json's, else 512
  std::int64_t max_sequences = 0;  // count only the documents of the first N sequences (0: all)
  bool force = false;          // replace an existing output file
};

struct IdfSummary {
  std::string tokenizer;       // e.g. "WordLevel, 64 tokens (model.pt:tokenizer.json)"
  std::int64_t documents = 0;  // documents counted
  std::vector<std::string> warnings;
};

// Counts and writes the file (complete or not at all: written beside it, then renamed). Throws
// InputError on bad input, and when the output exists without `force` or is one of the inputs.
IdfSummary run_idf(const IdfOptions& options);

}  // namespace headscan
