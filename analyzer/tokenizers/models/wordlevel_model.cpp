#include "analyzer/tokenizers/models/wordlevel_model.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/tokenizers/tokenizer_json.h"

namespace headscan {

WordLevelModel::WordLevelModel(std::unordered_map<std::string, std::int64_t> vocab,
                               std::optional<std::string> unk_token, std::string origin)
    : vocab_(std::move(vocab)), unk_token_(std::move(unk_token)), origin_(std::move(origin)) {
  for (const auto& [piece, id] : vocab_) {
    // Several pieces with one id: report the smallest, so that reports do not depend on hashing.
    const auto [entry, inserted] = pieces_.emplace(id, piece);
    if (!inserted && piece < entry->second) entry->second = piece;
    vocab_size_ = std::max(vocab_size_, id + 1);
  }
  if (unk_token_) {
    const auto unk = vocab_.find(*unk_token_);
    if (unk == vocab_.end()) {
      throw InputError(origin_ + ": expected the WordLevel unk_token \"" + *unk_token_ +
                       "\" to be in model.vocab, found it missing; add it to the vocabulary or set "
                       "unk_token to the vocabulary's unknown-word entry");
    }
    unk_id_ = unk->second;
  }
}

std::unique_ptr<WordLevelModel> WordLevelModel::from_json(const nlohmann::json& spec, const std::string& origin) {
  std::unordered_map<std::string, std::int64_t> vocab = read_vocab(spec, origin, "word");

  std::optional<std::string> unk_token;
  const auto unk_field = spec.find("unk_token");
  if (unk_field != spec.end() && !unk_field->is_null()) {
    if (!unk_field->is_string()) throw_bad_field(origin, "model.unk_token", "a string or null", &*unk_field);
    unk_token = unk_field->get<std::string>();
  }
  return std::make_unique<WordLevelModel>(std::move(vocab), std::move(unk_token), origin);
}

void WordLevelModel::tokenize(std::string_view word, std::vector<Token>& tokens) const {
  const auto found = vocab_.find(std::string(word));
  if (found != vocab_.end()) {
    tokens.push_back({found->second, found->first, 0, word.size()});
    return;
  }
  if (!unk_id_) {
    throw InputError(origin_ + ": the word \"" + std::string(word) +
                     "\" is not in the WordLevel vocabulary and the model has no unk_token; give a "
                     "tokenizer.json whose model sets unk_token, or text the vocabulary covers");
  }
  tokens.push_back({*unk_id_, *unk_token_, 0, word.size()});
}

std::optional<std::int64_t> WordLevelModel::token_to_id(std::string_view piece) const {
  const auto found = vocab_.find(std::string(piece));
  if (found == vocab_.end()) return std::nullopt;
  return found->second;
}

std::optional<std::string> WordLevelModel::id_to_piece(std::int64_t id) const {
  const auto found = pieces_.find(id);
  if (found == pieces_.end()) return std::nullopt;
  return found->second;
}

std::vector<std::int64_t> WordLevelModel::special_ids() const {
  if (unk_id_) return {*unk_id_};
  return {};
}

}  // namespace headscan
