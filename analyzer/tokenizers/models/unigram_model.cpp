#include "analyzer/tokenizers/models/unigram_model.h"

#include <cstdio>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/tokenizers/tokenizer_json.h"
#include "analyzer/tokenizers/unicode.h"

namespace headscan {
namespace {

constexpr double kUnknownPenalty = 10.0;  // Hugging Face models/unigram K_UNK_PENALTY, as SentencePiece

}  // namespace

UnigramModel::UnigramModel(std::vector<std::pair<std::string, double>> pieces, std::optional<std::int64_t> unk_id,
                           bool byte_fallback, std::string origin)
    : pieces_(std::move(pieces)), unk_id_(unk_id), byte_fallback_(byte_fallback), origin_(std::move(origin)) {
  if (pieces_.empty()) {
    throw InputError(origin_ + ": expected a Unigram model.vocab with at least one piece, found it empty");
  }
  if (unk_id_ && (*unk_id_ < 0 || *unk_id_ >= static_cast<std::int64_t>(pieces_.size()))) {
    throw InputError(origin_ + ": expected model.unk_id to be an index into model.vocab (0.." +
                     std::to_string(pieces_.size() - 1) + "), found " + std::to_string(*unk_id_));
  }
  double min_score = std::numeric_limits<double>::infinity();
  terminal_.push_back(-1);
  for (std::size_t id = 0; id < pieces_.size(); ++id) {
    const auto& [piece, score] = pieces_[id];
    ids_.emplace(piece, static_cast<std::int64_t>(id));  // the first of duplicates wins
    min_score = std::min(min_score, score);
    std::int32_t node = 0;
    for (const char byte : piece) {
      const std::uint64_t key = (static_cast<std::uint64_t>(node) << 8) | static_cast<unsigned char>(byte);
      const auto edge = edges_.find(key);
      if (edge != edges_.end()) {
        node = edge->second;
      } else {
        const auto child = static_cast<std::int32_t>(terminal_.size());
        terminal_.push_back(-1);
        edges_.emplace(key, child);
        node = child;
      }
    }
    if (node != 0) terminal_[node] = ids_.at(piece);
  }
  unknown_score_ = min_score - kUnknownPenalty;
}

std::unique_ptr<UnigramModel> UnigramModel::from_json(const nlohmann::json& spec, const std::string& origin) {
  const auto vocab_field = spec.find("vocab");
  if (vocab_field == spec.end() || !vocab_field->is_array()) {
    throw_bad_field(origin, "model.vocab", "a list of [piece, score] pairs",
                    vocab_field == spec.end() ? nullptr : &*vocab_field);
  }
  std::vector<std::pair<std::string, double>> pieces;
  pieces.reserve(vocab_field->size());
  for (std::size_t i = 0; i < vocab_field->size(); ++i) {
    const nlohmann::json& entry = (*vocab_field)[i];
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number()) {
      throw_bad_field(origin, "model.vocab[" + std::to_string(i) + "]", "a [piece, score] pair", &entry);
    }
    pieces.emplace_back(entry[0].get<std::string>(), entry[1].get<double>());
  }
  std::optional<std::int64_t> unk_id;
  if (const auto field = spec.find("unk_id"); field != spec.end() && !field->is_null()) {
    unk_id = token_id(*field, origin, "model.unk_id");
  }
  bool byte_fallback = false;
  if (const auto field = spec.find("byte_fallback"); field != spec.end() && !field->is_null()) {
    if (!field->is_boolean()) throw_bad_field(origin, "model.byte_fallback", "true or false", &*field);
    byte_fallback = field->get<bool>();
  }
  return std::make_unique<UnigramModel>(std::move(pieces), unk_id, byte_fallback, origin);
}

void UnigramModel::prefixes(std::string_view text, std::vector<std::pair<std::size_t, std::int64_t>>& found) const {
  found.clear();
  std::int32_t node = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const std::uint64_t key = (static_cast<std::uint64_t>(node) << 8) | static_cast<unsigned char>(text[i]);
    const auto edge = edges_.find(key);
    if (edge == edges_.end()) return;
    node = edge->second;
    if (terminal_[node] >= 0) found.emplace_back(i + 1, terminal_[node]);
  }
}

// Hugging Face Unigram::encode_optimized (after SentencePiece unigram_model.cc): best path over
// byte positions, ties kept by the first candidate (shorter pieces are offered first).
std::vector<std::pair<std::size_t, std::size_t>> UnigramModel::segment(std::string_view word) const {
  struct Node {
    std::int64_t id = -1;
    double score = 0;
    std::optional<std::size_t> starts_at;
  };
  std::vector<Node> best(word.size() + 1);
  std::vector<std::pair<std::size_t, std::int64_t>> found;
  for (std::size_t start = 0; start < word.size();) {
    const double score_here = best[start].score;
    const std::size_t character = decode_utf8(word, start).length;
    bool covers_character = false;
    prefixes(word.substr(start), found);
    for (const auto& [length, id] : found) {
      Node& target = best[start + length];
      const double candidate = score_here + pieces_[static_cast<std::size_t>(id)].second;
      if (!target.starts_at || candidate > target.score) target = {id, candidate, start};
      if (length == character) covers_character = true;
    }
    if (!covers_character) {
      if (!unk_id_) {
        throw InputError(origin_ + ": \"" + std::string(word.substr(start, character)) +
                         "\" is not covered by the Unigram vocabulary and the model has no unk_id; give a "
                         "tokenizer.json whose model sets unk_id, or text the vocabulary covers");
      }
      Node& target = best[start + character];
      const double candidate = score_here + unknown_score_;
      if (!target.starts_at || candidate > target.score) target = {*unk_id_, candidate, start};
    }
    start += character;
  }
  // Back from the end; unknown pieces next to each other fuse into one (fuse_unk is always on).
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  std::optional<std::pair<std::size_t, std::size_t>> unknown;
  for (std::size_t end = word.size(); end > 0;) {
    const Node& node = best[end];
    const std::size_t start = *node.starts_at;
    if (unk_id_ && node.id == *unk_id_) {
      if (!unknown) unknown.emplace(start, end);
      unknown->first = start;
    } else {
      if (unknown) spans.push_back(*std::exchange(unknown, std::nullopt));
      spans.emplace_back(start, end);
    }
    end = start;
  }
  if (unknown) spans.push_back(*unknown);
  return {spans.rbegin(), spans.rend()};
}

void UnigramModel::tokenize(std::string_view word, std::vector<Token>& tokens) const {
  for (const auto& [begin, end] : segment(word)) {
    const std::string piece(word.substr(begin, end - begin));
    const auto found = ids_.find(piece);
    if (found != ids_.end()) {
      tokens.push_back({found->second, piece, begin, end});
      continue;
    }
    if (byte_fallback_) {
      std::vector<Token> bytes;
      for (const char byte : piece) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned char>(byte));
        const auto byte_id = ids_.find(name);
        if (byte_id == ids_.end()) break;
        bytes.push_back({byte_id->second, name, begin, end});
      }
      if (bytes.size() == piece.size()) {
        tokens.insert(tokens.end(), bytes.begin(), bytes.end());
        continue;
      }
    }
    tokens.push_back({*unk_id_, pieces_[static_cast<std::size_t>(*unk_id_)].first, begin, end});
  }
}

std::optional<std::int64_t> UnigramModel::token_to_id(std::string_view piece) const {
  const auto found = ids_.find(std::string(piece));
  if (found == ids_.end()) return std::nullopt;
  return found->second;
}

std::optional<std::string> UnigramModel::id_to_piece(std::int64_t id) const {
  if (id < 0 || id >= static_cast<std::int64_t>(pieces_.size())) return std::nullopt;
  return pieces_[static_cast<std::size_t>(id)].first;
}

std::vector<std::int64_t> UnigramModel::special_ids() const {
  if (unk_id_) return {*unk_id_};
  return {};
}

}  // namespace headscan
