#pragma once
// Hugging Face "WordPiece" model (BERT): greedy longest match from the start of the word, pieces
// after the first carry the continuing-subword prefix ("##"); a word with a part that matches
// nothing, or longer than max_input_chars_per_word characters, is one unknown token.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json_fwd.hpp>

#include "analyzer/tokenizers/models/tokenizer_model.h"

namespace headscan {

class WordPieceModel : public TokenizerModel {
 public:
  // Throws InputError (naming `origin`) if unk_token is not in `vocab`.
  WordPieceModel(std::unordered_map<std::string, std::int64_t> vocab, std::string unk_token,
                 std::string continuing_subword_prefix, std::size_t max_input_chars_per_word, std::string origin);

  // From {"type": "WordPiece", "vocab": {piece: id}, "unk_token": "[UNK]",
  // "continuing_subword_prefix": "##", "max_input_chars_per_word": 100}.
  static std::unique_ptr<WordPieceModel> from_json(const nlohmann::json& spec, const std::string& origin);

  void tokenize(std::string_view word, std::vector<Token>& tokens) const override;
  std::optional<std::int64_t> token_to_id(std::string_view piece) const override;
  std::optional<std::string> id_to_piece(std::int64_t id) const override;
  std::int64_t vocab_size() const override { return vocab_size_; }
  std::vector<std::int64_t> special_ids() const override { return {unk_id_}; }
  std::string type() const override { return "WordPiece"; }

 private:
  std::unordered_map<std::string, std::int64_t> vocab_;
  std::unordered_map<std::int64_t, std::string> pieces_;
  std::string unk_token_;
  std::int64_t unk_id_ = 0;
  std::string prefix_;
  std::size_t max_input_chars_per_word_;
  std::int64_t vocab_size_ = 0;
};

}  // namespace headscan
