#pragma once
// `headscan tokenize`: the ids, pieces and character spans the analysis uses for each line, one
// JSON object per sequence window, so that users can debug tokenizer mismatches and tests can
// check tokenizers end to end. Output goes to a stream; nothing here prints.

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headscan {

struct TokenizeOptions {
  std::string model_path;           // MODEL.pt: its tokenizer.json and headscan.json (BOS, max_length)
  std::string tokenizer_path;       // tokenizer.json or .model; overrides the model's tokenizer
  std::string input_path;           // one document per line; empty or "-": the standard input
  std::optional<std::string> text;  // this text instead of a file (lines split at "\n")
  std::int64_t max_length = 0;      // tokens per window, BOS and suffix included; 0: headscan.json's, else 512
};

struct TokenizeSummary {
  std::string tokenizer;  // e.g. "BPE, 512 tokens (model.pt:tokenizer.json)"
  std::string bos;        // e.g. "<s> (id 1, from headscan.json)", or "none"
  std::string suffix;     // e.g. "[SEP] (from tokenizer template)", or "none"
  std::int64_t max_length = 0;
  std::size_t documents = 0;
  std::size_t windows = 0;
  std::size_t tokens = 0;  // BOS and suffix included
  std::vector<std::string> warnings;
};

// Writes one line per window of every non-empty input line:
//   {"line": 3, "window": 0, "ids": [1, 9038, …], "tokens": ["<s>", "▁Once", …],
//    "spans": [[0, 0], [0, 4], …]}
// exactly the sequences the analysis builds (make_sequences: BOS per choose_bos, windows of
// max_length, the template's suffix after each), which for one window is what Hugging Face's
// tokenizers gives with add_special_tokens=True. Spans are [begin, end) in Unicode code points of
// the line, like the offsets of Hugging Face tokenizers; a token that covers part of a character
// (a byte-level or <0xNN> token) spans the whole character; BOS and the suffix span [0, 0].
// Throws InputError on bad input.
TokenizeSummary run_tokenize(const TokenizeOptions& options, std::istream& standard_input, std::ostream& out);

// For each byte offset 0..text.size() of valid UTF-8 `text`, the number of code points that
// start before it.
std::vector<std::size_t> code_points_before(std::string_view text);

}  // namespace headscan
