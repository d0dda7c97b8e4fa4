#pragma once
// Hugging Face "BPE" model (models/bpe): a word starts as its characters, then the ranked merges
// are applied, lowest rank first and leftmost first among equals, until none applies. Characters
// missing from the vocabulary become <0xNN> byte tokens (byte_fallback) or the unknown token.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyzer/tokenizer_model.h"

namespace headscan {

struct BpeOptions {
  std::optional<std::string> unk_token;
  std::optional<std::string> continuing_subword_prefix;  // put before every non-first character
  std::optional<std::string> end_of_word_suffix;         // put after the last character
  bool fuse_unk = false;       // consecutive unknown characters become one unknown token
  bool byte_fallback = false;  // unknown characters become their UTF-8 bytes <0xNN>
  bool ignore_merges = false;  // a word that is in the vocabulary is one token, merges or not
};

class BpeModel : public TokenizerModel {
 public:
  // `merges` in rank order. Throws InputError (naming `origin`) when a merge's parts or result
  // are not in the vocabulary, or unk_token is missing from it.
  BpeModel(std::unordered_map<std::string, std::int64_t> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options, std::string origin);

  // From the "model" object of a tokenizer.json: {"type": "BPE", "vocab": {piece: id}, "merges":
  // ["a b", …] or [["a", "b"], …], "unk_token", "continuing_subword_prefix",
  // "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges", "dropout"}. A dropout
  // above 0 makes tokenization random and is refused.
  static std::unique_ptr<BpeModel> from_json(const nlohmann::json& spec, const std::string& origin);

  void tokenize(std::string_view word, std::vector<Token>& tokens) const override;
  std::optional<std::int64_t> token_to_id(std::string_view piece) const override;
  std::optional<std::string> id_to_piece(std::int64_t id) const override;
  std::int64_t vocab_size() const override { return vocab_size_; }
  std::vector<std::int64_t> special_ids() const override;
  std::string type() const override { return "BPE"; }

 private:
  // A token of a word: its id and the bytes [begin, end) of the word it covers.
  struct Symbol {
    std::int64_t id;
    std::uint32_t begin;
    std::uint32_t end;
  };
  struct PairHash {
    std::size_t operator()(const std::pair<std::int64_t, std::int64_t>& pair) const {
      return std::hash<std::int64_t>()(pair.first * 1000003 + pair.second);
    }
  };
  struct Merge {
    std::uint32_t rank;
    std::int64_t result;
  };

  std::vector<Symbol> merge_word(std::string_view word) const;
  void apply_merges(std::vector<Symbol>& symbols) const;

  std::unordered_map<std::string, std::int64_t> vocab_;
  std::unordered_map<std::int64_t, std::string> pieces_;
  std::unordered_map<std::pair<std::int64_t, std::int64_t>, Merge, PairHash> merges_;
  std::optional<std::int64_t> byte_ids_[256];  // <0x00> … <0xFF> when byte_fallback
  BpeOptions options_;
  std::optional<std::int64_t> unk_id_;
  std::int64_t vocab_size_ = 0;
  std::string origin_;

  // Words seen before, as Hugging Face caches them: most words of a corpus repeat.
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<Symbol>> cache_;
};

}  // namespace headscan
