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

#include "analyzer/tokenizers/models/tokenizer_model.h"

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
  // The merges as a flat open-addressing table keyed by the pair of ids: looked up for every
  // pair of every word, so it is kept in one contiguous array.
  class MergeTable {
   public:
    struct Merge {
      std::uint64_t key = 0;  // 0: empty slot
      std::uint32_t rank = 0;
      std::int32_t result = 0;
    };
    void reserve(std::size_t merges);
    // A pair listed twice keeps its last rank, as the tokenizers library's map does.
    void insert_or_assign(std::int64_t left, std::int64_t right, std::uint32_t rank, std::int64_t result);
    const Merge* find(std::int64_t left, std::int64_t right) const;

   private:
    std::size_t slot_of(std::uint64_t key) const;
    std::vector<Merge> slots_;
    std::uint64_t mask_ = 0;
  };

  std::vector<Symbol> merge_word(std::string_view word) const;
  void append_tokens(const Symbol* symbols, std::size_t count, std::vector<Token>& tokens) const;
  void apply_merges(std::vector<Symbol>& symbols) const;

  std::unordered_map<std::string, std::int64_t> vocab_;
  std::vector<std::string> pieces_;  // by id; empty where no piece has that id
  MergeTable merges_;
  // Ids of single characters below U+0800 (GPT-2's byte alphabet lies there), -1 if absent; used
  // when no prefix or suffix changes how characters are looked up.
  std::vector<std::int32_t> small_character_ids_;
  std::optional<std::int64_t> byte_ids_[256];  // <0x00> … <0xFF> when byte_fallback
  BpeOptions options_;
  std::optional<std::int64_t> unk_id_;
  std::int64_t vocab_size_ = 0;
  std::string origin_;

  // Words seen before (most words of a corpus repeat), as Hugging Face caches them: a flat
  // direct-mapped table of short words and their symbols, a newer word replacing an older one
  // in its slot. Flat because a node-based map cost more in cache misses than merging.
  class WordCache {
   public:
    static constexpr std::size_t kMaxWordBytes = 22;
    static constexpr std::size_t kMaxSymbols = 8;
    // The number of symbols of `word` copied to `out`, or -1 when it is not cached.
    int find(std::string_view word, Symbol* out) const;
    void insert(std::string_view word, const std::vector<Symbol>& symbols);

   private:
    struct Slot {
      std::uint64_t hash = 0;
      std::uint8_t length = 0;
      std::uint8_t count = 0;  // 0: empty
      char word[kMaxWordBytes] = {};
      struct {
        std::int32_t id;
        std::uint8_t begin;
        std::uint8_t end;
      } symbols[kMaxSymbols] = {};
    };
    mutable std::mutex mutex_;
    std::vector<Slot> slots_;  // allocated by the first insert
  };
  mutable WordCache cache_;
};

}  // namespace headscan
