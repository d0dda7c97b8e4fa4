#pragma once
// Hugging Face "WordLevel" model: every word is one vocabulary entry, or the unknown token.

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json_fwd.hpp>

#include "analyzer/tokenizers/models/tokenizer_model.h"

namespace headscan {

class WordLevelModel : public TokenizerModel {
 public:
  // `unk_token` may be absent: an unknown word is then an error at encode time. Throws
  // InputError if it is given but not in `vocab`. `origin` names the file in errors.
  WordLevelModel(std::unordered_map<std::string, std::int64_t> vocab, std::optional<std::string> unk_token,
                 std::string origin);

  // From the "model" object of a tokenizer.json: {"type": "WordLevel", "vocab": {piece: id},
  // "unk_token": "<unk>" | null}.
  static std::unique_ptr<WordLevelModel> from_json(const nlohmann::json& spec, const std::string& origin);

  void tokenize(std::string_view word, std::vector<Token>& tokens) const override;
  std::optional<std::int64_t> token_to_id(std::string_view piece) const override;
  std::optional<std::string> id_to_piece(std::int64_t id) const override;
  std::int64_t vocab_size() const override { return vocab_size_; }
  std::vector<std::int64_t> special_ids() const override;
  std::string type() const override { return "WordLevel"; }

 private:
  std::unordered_map<std::string, std::int64_t> vocab_;
  std::unordered_map<std::int64_t, std::string> pieces_;  // by id, for id_to_piece
  std::optional<std::string> unk_token_;
  std::optional<std::int64_t> unk_id_;
  std::int64_t vocab_size_ = 0;
  std::string origin_;
};

}  // namespace headscan
