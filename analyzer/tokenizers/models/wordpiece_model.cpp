#include "analyzer/tokenizers/models/wordpiece_model.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/tokenizers/tokenizer_json.h"
#include "analyzer/tokenizers/unicode.h"

namespace headscan {

WordPieceModel::WordPieceModel(std::unordered_map<std::string, std::int64_t> vocab, std::string unk_token,
                               std::string continuing_subword_prefix, std::size_t max_input_chars_per_word,
                               std::string origin)
    : vocab_(std::move(vocab)),
      unk_token_(std::move(unk_token)),
      prefix_(std::move(continuing_subword_prefix)),
      max_input_chars_per_word_(max_input_chars_per_word) {
  for (const auto& [piece, id] : vocab_) {
    const auto [entry, inserted] = pieces_.emplace(id, piece);
    if (!inserted && piece < entry->second) entry->second = piece;
    vocab_size_ = std::max(vocab_size_, id + 1);
  }
  const auto unk = vocab_.find(unk_token_);
  if (unk == vocab_.end()) {
    throw InputError(origin + ": expected the WordPiece unk_token \"" + unk_token_ +
                     "\" to be in model.vocab, found it missing; fix unk_token or the vocabulary");
  }
  unk_id_ = unk->second;
}

std::unique_ptr<WordPieceModel> WordPieceModel::from_json(const nlohmann::json& spec, const std::string& origin) {
  std::unordered_map<std::string, std::int64_t> vocab = read_vocab(spec, origin, "piece");
  auto string_field = [&](const char* name, const char* fallback) {
    const auto field = spec.find(name);
    if (field == spec.end() || field->is_null()) return std::string(fallback);
    if (!field->is_string()) throw_bad_field(origin, std::string("model.") + name, "a string", &*field);
    return field->get<std::string>();
  };
  std::size_t max_chars = 100;
  if (const auto field = spec.find("max_input_chars_per_word"); field != spec.end() && !field->is_null()) {
    if (!field->is_number_unsigned()) {
      throw_bad_field(origin, "model.max_input_chars_per_word", "a non-negative integer", &*field);
    }
    max_chars = field->get<std::size_t>();
  }
  return std::make_unique<WordPieceModel>(std::move(vocab), string_field("unk_token", "[UNK]"),
                                          string_field("continuing_subword_prefix", "##"), max_chars, origin);
}

// Hugging Face models/wordpiece WordPiece::tokenize.
void WordPieceModel::tokenize(std::string_view word, std::vector<Token>& tokens) const {
  std::size_t characters = 0;
  for (std::size_t pos = 0; pos < word.size(); pos += decode_utf8(word, pos).length) ++characters;
  const std::size_t first = tokens.size();
  bool unknown = characters > max_input_chars_per_word_;
  std::string candidate;
  for (std::size_t start = 0; !unknown && start < word.size();) {
    std::size_t end = word.size();
    bool found = false;
    while (start < end) {
      candidate.assign(start > 0 ? prefix_ : std::string());
      candidate.append(word.substr(start, end - start));
      const auto entry = vocab_.find(candidate);
      if (entry != vocab_.end()) {
        tokens.push_back({entry->second, entry->first, start, end});
        found = true;
        break;
      }
      // One character shorter: step back to the start of the last character.
      std::size_t last = end - 1;
      while (last > start && (static_cast<unsigned char>(word[last]) & 0xC0) == 0x80) --last;
      end = decode_utf8(word, last).length == end - last ? last : end - 1;
    }
    if (!found) unknown = true;
    start = end;
  }
  if (unknown) {
    tokens.resize(first);
    tokens.push_back({unk_id_, unk_token_, 0, word.size()});
  }
}

std::optional<std::int64_t> WordPieceModel::token_to_id(std::string_view piece) const {
  const auto found = vocab_.find(std::string(piece));
  if (found == vocab_.end()) return std::nullopt;
  return found->second;
}

std::optional<std::string> WordPieceModel::id_to_piece(std::int64_t id) const {
  const auto found = pieces_.find(id);
  if (found == pieces_.end()) return std::nullopt;
  return found->second;
}

}  // namespace headscan
