#pragma once
// The tokenizer interface. One implementation per tokenizer model (WordLevel now; BPE, WordPiece,
// Unigram and SentencePiece plug in behind the same interface), built by load_tokenizer().

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headscan {

struct Token {
  std::int64_t id = 0;
  std::string piece;      // the vocabulary entry, e.g. "Ġthe", "##ing", "<0xE4>"
  std::size_t begin = 0;  // byte offset of the token's text in the original line (UTF-8)
  std::size_t end = 0;    // one past its last byte; begin == end for tokens with no text (BOS)
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Tokens of one line of text (UTF-8, no line break), without any special token a template
  // would add: BOS is the sequence builder's job (headscan.json), never added twice.
  virtual std::vector<Token> encode(std::string_view text) const = 0;

  // One past the largest id the tokenizer can produce.
  virtual std::int64_t vocab_size() const = 0;
  virtual std::optional<std::int64_t> token_to_id(std::string_view piece) const = 0;
  virtual std::string id_to_piece(std::int64_t id) const = 0;
  // Special tokens (added tokens marked special, BOS/EOS/PAD/UNK of the model) are excluded from
  // content statistics.
  virtual bool is_special(std::int64_t id) const = 0;
  // For reports and errors, e.g. "WordLevel, 64 tokens".
  virtual std::string describe() const = 0;
};

// Builds a tokenizer from the text of a Hugging Face tokenizer.json. `origin` names the file in
// error messages ("model.pt:tokenizer.json"). Throws InputError on a malformed file or on any
// model, normalizer or pre-tokenizer type that is not supported, listing what is.
std::unique_ptr<Tokenizer> tokenizer_from_hf_json(std::string_view json_text, const std::string& origin);

// Loads a tokenizer file by path (tokenizer.json). Throws InputError if it cannot be read.
std::unique_ptr<Tokenizer> load_tokenizer_file(const std::string& path);

}  // namespace headscan
