#pragma once
// The tokenizer interface: HfTokenizer runs Hugging Face tokenizer.json files (BPE,
// WordPiece, Unigram, WordLevel models), SentencePieceTokenizer runs SentencePiece .model files.
// load_tokenizer_file() picks by the file's extension.

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

// The special tokens a tokenizer's template puts around a single text (Hugging Face's
// post-processor with add_special_tokens=True): "[CLS] $A [SEP]" has prefix {"[CLS]"} and suffix
// {"[SEP]"}; "<s> $A" has no suffix.
struct SingleTemplate {
  std::vector<std::string> prefix;
  std::vector<std::string> suffix;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Tokens of one line of text (UTF-8, no line break), without any special token a template
  // would add: the sequence builder frames every window with BOS and the template's suffix.
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
  // Whether pieces spell bytes in GPT-2's byte-level alphabet ("Ġ" for a space; byte_level.h), as
  // behind a ByteLevel pre-tokenizer or normalizer. Other pieces spell text as it is, SentencePiece
  // style ("▁" for a space, "<0x0A>" for a byte).
  virtual bool byte_level() const { return false; }
  // The special tokens the tokenizer's own template puts before a text (the leading [CLS] or <s>
  // of a post-processor, a SentencePiece model's BOS), which encode() never adds. choose_bos()
  // decides whether the sequence builder uses them.
  virtual std::vector<std::string> template_prefix() const { return {}; }
  // The special tokens the template puts after a text (BERT's [SEP], RoBERTa's </s>), which
  // encode() never adds; the sequence builder appends them to every window (template_suffix_ids).
  virtual std::vector<std::string> template_suffix() const { return {}; }
};

// Builds a tokenizer from the text of a Hugging Face tokenizer.json. `origin` names the file in
// error messages ("model.pt:tokenizer.json"). Throws InputError on a malformed file or on any
// model, normalizer or pre-tokenizer type that is not supported, listing what is.
std::unique_ptr<Tokenizer> tokenizer_from_hf_json(std::string_view json_text, const std::string& origin);

// Loads a tokenizer file by path: a Hugging Face tokenizer.json (".json") or a SentencePiece model
// (".model"). Throws InputError if it cannot be read or is not a supported tokenizer.
std::unique_ptr<Tokenizer> load_tokenizer_file(const std::string& path);

// The BOS token the sequence builder prepends to every window.
struct BosChoice {
  std::int64_t id = 0;
  std::string token;
  std::string source;  // "headscan.json" or "tokenizer template"
};

// At most one BOS, never added twice (DESIGN.md, "Sequences"): headscan.json's bos_token when it
// is set (non-empty `metadata_bos_token`); otherwise the one special token the tokenizer's
// template puts before a text (template_prefix()); otherwise none. Throws InputError when the
// chosen token is not in the vocabulary, or when the template puts several tokens before the text
// (set bos_token in headscan.json then). `metadata_origin` names headscan.json in messages.
std::optional<BosChoice> choose_bos(const Tokenizer& tokenizer, const std::string& metadata_bos_token,
                                    const std::string& metadata_origin);

// The ids of template_suffix(), which the sequence builder appends to every window. The suffix is
// the tokenizer's, whatever gives BOS: headscan.json's bos_token replaces the template's prefix
// only, since a model is trained with its tokenizer's whole template. Throws InputError when a
// suffix token is not in the vocabulary.
std::vector<std::int64_t> template_suffix_ids(const Tokenizer& tokenizer);

}  // namespace headscan
