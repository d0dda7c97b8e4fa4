#pragma once
// Hugging Face "Unigram" model (SentencePiece unigram: T5, ALBERT, XLNet): the segmentation of a
// word into vocabulary pieces with the highest total score (Viterbi). A character no piece covers
// scores (lowest score − 10) as the unknown token; consecutive unknown characters fuse into one,
// which byte_fallback spells as <0xNN> byte tokens when the vocabulary has them.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyzer/tokenizers/models/tokenizer_model.h"

namespace headscan {

class UnigramModel : public TokenizerModel {
 public:
  // `pieces[id]` = (piece, score). Throws InputError (naming `origin`) on an empty vocabulary or an
  // unk_id outside it.
  UnigramModel(std::vector<std::pair<std::string, double>> pieces, std::optional<std::int64_t> unk_id,
               bool byte_fallback, std::string origin);

  // From {"type": "Unigram", "vocab": [[piece, score], …], "unk_id": 0 | null, "byte_fallback"}.
  static std::unique_ptr<UnigramModel> from_json(const nlohmann::json& spec, const std::string& origin);

  void tokenize(std::string_view word, std::vector<Token>& tokens) const override;
  std::optional<std::int64_t> token_to_id(std::string_view piece) const override;
  std::optional<std::string> id_to_piece(std::int64_t id) const override;
  std::int64_t vocab_size() const override { return static_cast<std::int64_t>(pieces_.size()); }
  std::vector<std::int64_t> special_ids() const override;
  std::string type() const override { return "Unigram"; }

 private:
  // Pieces that are prefixes of `text`, shortest first: (length in bytes, id).
  void prefixes(std::string_view text, std::vector<std::pair<std::size_t, std::int64_t>>& found) const;
  // The best segmentation as byte spans [begin, end), unknown runs fused.
  std::vector<std::pair<std::size_t, std::size_t>> segment(std::string_view word) const;

  std::vector<std::pair<std::string, double>> pieces_;
  std::unordered_map<std::string, std::int64_t> ids_;
  // A byte trie over the pieces: edges keyed by (node << 8 | byte); terminal[node] = id or -1.
  std::unordered_map<std::uint64_t, std::int32_t> edges_;
  std::vector<std::int64_t> terminal_;
  std::optional<std::int64_t> unk_id_;
  bool byte_fallback_;
  double unknown_score_ = 0;
  std::string origin_;
};

}  // namespace headscan
