#include "analyzer/tokenizers/models/bpe_model.h"

#include <algorithm>
#include <cstdio>
#include <queue>

#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/tokenizers/tokenizer_json.h"
#include "analyzer/tokenizers/unicode.h"

namespace headscan {
namespace {

constexpr std::size_t kCacheSlots = std::size_t{1} << 16;  // 6 MiB
constexpr std::int64_t kMaxVocabularyIds = 1 << 26;  // ids index a table

std::optional<std::string> optional_string(const nlohmann::json& spec, const char* name, const std::string& origin) {
  const auto field = spec.find(name);
  if (field == spec.end() || field->is_null()) return std::nullopt;
  if (!field->is_string()) throw_bad_field(origin, std::string("model.") + name, "a string or null", &*field);
  return field->get<std::string>();
}

bool bool_option(const nlohmann::json& spec, const char* name, const std::string& origin) {
  const auto field = spec.find(name);
  if (field == spec.end() || field->is_null()) return false;
  if (!field->is_boolean()) throw_bad_field(origin, std::string("model.") + name, "true or false", &*field);
  return field->get<bool>();
}

std::vector<std::pair<std::string, std::string>> merges_from_json(const nlohmann::json& spec,
                                                                  const std::string& origin) {
  const auto field = spec.find("merges");
  if (field == spec.end() || !field->is_array()) {
    throw_bad_field(origin, "model.merges", "a list of merges (\"a b\" or [\"a\", \"b\"])",
                    field == spec.end() ? nullptr : &*field);
  }
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(field->size());
  for (std::size_t rank = 0; rank < field->size(); ++rank) {
    const nlohmann::json& merge = (*field)[rank];
    const std::string where = "model.merges[" + std::to_string(rank) + "]";
    if (merge.is_string()) {
      const std::string text = merge.get<std::string>();
      const std::size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
        throw_bad_field(origin, where, "two symbols separated by one space", &merge);
      }
      merges.emplace_back(text.substr(0, space), text.substr(space + 1));
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
    } else {
      throw_bad_field(origin, where, "\"a b\" or [\"a\", \"b\"]", &merge);
    }
  }
  return merges;
}

// A symbol of a word while merges run: a doubly linked list over the initial symbols.
struct Node {
  std::int64_t id;
  std::uint32_t begin;
  std::uint32_t end;
  int previous;
  int next;
  bool alive;
};

struct Candidate {
  std::uint32_t rank;
  int position;
  std::int64_t result;
};

// Lowest rank first, then leftmost (Hugging Face models/bpe/word.rs, Merge's Ord).
struct LaterCandidate {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.position > b.position;
  }
};

std::uint64_t pair_key(std::int64_t left, std::int64_t right) {
  // Ids are below 2^26 (kMaxVocabularyIds); +1 keeps the key of every pair non-zero.
  return (static_cast<std::uint64_t>(left + 1) << 32) | static_cast<std::uint64_t>(right + 1);
}

// FNV-1a: short words hash faster than with std::hash.
std::uint64_t word_hash(std::string_view word) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : word) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return hash;
}

}  // namespace

int BpeModel::WordCache::find(std::string_view word, Symbol* out) const {
  if (word.size() > kMaxWordBytes) return -1;
  const std::uint64_t hash = word_hash(word);
  std::lock_guard<std::mutex> lock(mutex_);
  if (slots_.empty()) return -1;
  const Slot& slot = slots_[hash & (kCacheSlots - 1)];
  if (slot.count == 0 || slot.hash != hash || slot.length != word.size() ||
      word.compare(0, word.size(), slot.word, slot.length) != 0) {
    return -1;
  }
  for (std::size_t i = 0; i < slot.count; ++i) out[i] = {slot.symbols[i].id, slot.symbols[i].begin, slot.symbols[i].end};
  return slot.count;
}

void BpeModel::WordCache::insert(std::string_view word, const std::vector<Symbol>& symbols) {
  if (word.size() > kMaxWordBytes || symbols.empty() || symbols.size() > kMaxSymbols) return;
  const std::uint64_t hash = word_hash(word);
  std::lock_guard<std::mutex> lock(mutex_);
  if (slots_.empty()) slots_.resize(kCacheSlots);
  Slot& slot = slots_[hash & (kCacheSlots - 1)];
  slot.hash = hash;
  slot.length = static_cast<std::uint8_t>(word.size());
  slot.count = static_cast<std::uint8_t>(symbols.size());
  word.copy(slot.word, word.size());
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    slot.symbols[i] = {static_cast<std::int32_t>(symbols[i].id), static_cast<std::uint8_t>(symbols[i].begin),
                       static_cast<std::uint8_t>(symbols[i].end)};
  }
}

void BpeModel::MergeTable::reserve(std::size_t merges) {
  std::size_t capacity = 16;
  while (capacity < 2 * merges) capacity *= 2;  // load factor at most 1/2
  slots_.assign(capacity, Merge{});
  mask_ = capacity - 1;
}

std::size_t BpeModel::MergeTable::slot_of(std::uint64_t key) const {
  std::size_t slot = static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> 20) & mask_;
  while (slots_[slot].key != 0 && slots_[slot].key != key) slot = (slot + 1) & mask_;
  return slot;
}

void BpeModel::MergeTable::insert_or_assign(std::int64_t left, std::int64_t right, std::uint32_t rank,
                                            std::int64_t result) {
  const std::uint64_t key = pair_key(left, right);
  slots_[slot_of(key)] = Merge{key, rank, static_cast<std::int32_t>(result)};
}

const BpeModel::MergeTable::Merge* BpeModel::MergeTable::find(std::int64_t left, std::int64_t right) const {
  const Merge& merge = slots_[slot_of(pair_key(left, right))];
  return merge.key != 0 ? &merge : nullptr;
}

BpeModel::BpeModel(std::unordered_map<std::string, std::int64_t> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options,
                   std::string origin)
    : vocab_(std::move(vocab)), options_(std::move(options)), origin_(std::move(origin)) {
  for (const auto& [piece, id] : vocab_) vocab_size_ = std::max(vocab_size_, id + 1);
  if (vocab_size_ > kMaxVocabularyIds) {
    throw InputError(origin_ + ": expected BPE ids below " + std::to_string(kMaxVocabularyIds) + ", found id " +
                     std::to_string(vocab_size_ - 1) + "; is model.vocab a vocabulary?");
  }
  pieces_.resize(static_cast<std::size_t>(vocab_size_));
  for (const auto& [piece, id] : vocab_) {
    // Several pieces with one id: report the smallest, so that reports do not depend on hashing.
    std::string& entry = pieces_[static_cast<std::size_t>(id)];
    if (entry.empty() || piece < entry) entry = piece;
  }
  auto id_of = [&](const std::string& piece, std::size_t rank) {
    const auto found = vocab_.find(piece);
    if (found == vocab_.end()) {
      throw InputError(origin_ + ": expected every part and result of model.merges to be in model.vocab, found \"" +
                       piece + "\" missing (merge " + std::to_string(rank) +
                       "); the file is inconsistent, export it again with the tokenizers library");
    }
    return found->second;
  };
  const std::size_t prefix_length = options_.continuing_subword_prefix ? options_.continuing_subword_prefix->size() : 0;
  merges_.reserve(merges.size());
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    // The result drops the right part's continuing-subword prefix ("un" + "##do" = "undo").
    const std::string result = left + right.substr(std::min(prefix_length, right.size()));
    const std::int64_t left_id = id_of(left, rank);  // in order: the first missing piece is reported
    const std::int64_t right_id = id_of(right, rank);
    merges_.insert_or_assign(left_id, right_id, static_cast<std::uint32_t>(rank), id_of(result, rank));
  }
  // Empty prefix and suffix strings (GPT-2's files say "") change nothing.
  if (options_.continuing_subword_prefix && options_.continuing_subword_prefix->empty()) {
    options_.continuing_subword_prefix.reset();
  }
  if (options_.end_of_word_suffix && options_.end_of_word_suffix->empty()) options_.end_of_word_suffix.reset();
  if (!options_.continuing_subword_prefix && !options_.end_of_word_suffix) {
    small_character_ids_.assign(0x800, -1);
    std::string character;
    for (char32_t c = 0; c < 0x800; ++c) {
      character.clear();
      append_utf8(character, c);
      const auto found = vocab_.find(character);
      if (found != vocab_.end()) small_character_ids_[c] = static_cast<std::int32_t>(found->second);
    }
  }
  if (options_.unk_token) {
    const auto unk = vocab_.find(*options_.unk_token);
    if (unk != vocab_.end()) unk_id_ = unk->second;
  }
  if (options_.byte_fallback) {
    for (int byte = 0; byte < 256; ++byte) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", byte);
      const auto found = vocab_.find(name);
      if (found != vocab_.end()) byte_ids_[byte] = found->second;
    }
  }
}

std::unique_ptr<BpeModel> BpeModel::from_json(const nlohmann::json& spec, const std::string& origin) {
  std::unordered_map<std::string, std::int64_t> vocab = read_vocab(spec, origin, "token");
  const auto dropout = spec.find("dropout");
  if (dropout != spec.end() && !dropout->is_null()) {
    if (!dropout->is_number()) throw_bad_field(origin, "model.dropout", "a number or null", &*dropout);
    if (dropout->get<double>() > 0) {
      throw InputError(origin + ": BPE dropout " + dropout->dump() +
                       " makes tokenization random, so the analysis could not use the ids the model saw; "
                       "set \"dropout\": null in the tokenizer.json");
    }
  }
  BpeOptions options;
  options.unk_token = optional_string(spec, "unk_token", origin);
  options.continuing_subword_prefix = optional_string(spec, "continuing_subword_prefix", origin);
  options.end_of_word_suffix = optional_string(spec, "end_of_word_suffix", origin);
  options.fuse_unk = bool_option(spec, "fuse_unk", origin);
  options.byte_fallback = bool_option(spec, "byte_fallback", origin);
  options.ignore_merges = bool_option(spec, "ignore_merges", origin);
  return std::make_unique<BpeModel>(std::move(vocab), merges_from_json(spec, origin), std::move(options), origin);
}

// Hugging Face BPE::merge_word: characters (with prefix and suffix) to ids, unknown ones to bytes
// or the unknown token, then the merges.
std::vector<BpeModel::Symbol> BpeModel::merge_word(std::string_view word) const {
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  std::optional<Symbol> unknown;  // pending, so that fuse_unk can extend it
  std::string key;
  for (std::size_t pos = 0; pos < word.size();) {
    const Utf8Char character = decode_utf8(word, pos);
    const std::size_t length = character.length;
    const auto begin = static_cast<std::uint32_t>(pos);
    const auto end = static_cast<std::uint32_t>(pos + length);
    if (character.valid && character.code_point < small_character_ids_.size() &&
        small_character_ids_[character.code_point] >= 0) {
      if (unknown) symbols.push_back(*std::exchange(unknown, std::nullopt));
      symbols.push_back({small_character_ids_[character.code_point], begin, end});
      pos += length;
      continue;
    }
    key.clear();
    if (pos > 0 && options_.continuing_subword_prefix) key += *options_.continuing_subword_prefix;
    key.append(word.substr(pos, length));
    if (pos + length == word.size() && options_.end_of_word_suffix) key += *options_.end_of_word_suffix;
    pos += length;

    if (const auto found = vocab_.find(key); found != vocab_.end()) {
      if (unknown) symbols.push_back(*std::exchange(unknown, std::nullopt));
      symbols.push_back({found->second, begin, end});
      continue;
    }
    if (options_.byte_fallback &&
        std::all_of(key.begin(), key.end(), [&](char byte) { return byte_ids_[static_cast<unsigned char>(byte)].has_value(); })) {
      // Every byte token covers the whole character: a part of a character has no span of its own.
      // A pending unknown token stays pending, as in the tokenizers library (it only comes after
      // the bytes when a vocabulary lacks some <0xNN>).
      for (const char byte : key) symbols.push_back({*byte_ids_[static_cast<unsigned char>(byte)], begin, end});
      continue;
    }
    if (!options_.unk_token) continue;  // the tokenizers library drops the character
    if (!unk_id_) {
      throw InputError(origin_ + ": \"" + std::string(word) + "\" needs the BPE unk_token \"" + *options_.unk_token +
                       "\", which is not in model.vocab; fix the tokenizer.json");
    }
    if (unknown && options_.fuse_unk) {
      unknown->end = end;
    } else {
      if (unknown) symbols.push_back(*unknown);
      unknown = Symbol{*unk_id_, begin, end};
    }
  }
  if (unknown) symbols.push_back(*unknown);
  apply_merges(symbols);
  return symbols;
}

// Hugging Face Word::merge_all without dropout.
void BpeModel::apply_merges(std::vector<Symbol>& symbols) const {
  if (symbols.size() < 2) return;
  std::vector<Node> nodes;
  nodes.reserve(symbols.size());
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    nodes.push_back({symbols[i].id, symbols[i].begin, symbols[i].end, static_cast<int>(i) - 1,
                     i + 1 < symbols.size() ? static_cast<int>(i) + 1 : -1, true});
  }
  std::priority_queue<Candidate, std::vector<Candidate>, LaterCandidate> queue;
  auto offer = [&](int position) {
    const int next = nodes[position].next;
    if (next < 0) return;
    const MergeTable::Merge* merge = merges_.find(nodes[position].id, nodes[next].id);
    if (merge != nullptr) queue.push({merge->rank, position, merge->result});
  };
  for (int i = 0; i + 1 < static_cast<int>(nodes.size()); ++i) offer(i);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Node& left = nodes[top.position];
    if (!left.alive || left.next < 0) continue;
    Node& right = nodes[left.next];
    // Skip entries made stale by an earlier merge of either symbol.
    const MergeTable::Merge* merge = merges_.find(left.id, right.id);
    if (merge == nullptr || merge->result != top.result) continue;
    left.id = top.result;
    left.end = right.end;
    left.next = right.next;
    right.alive = false;
    if (left.next >= 0) nodes[left.next].previous = top.position;
    if (left.previous >= 0) offer(left.previous);
    offer(top.position);
  }
  symbols.clear();
  for (const Node& node : nodes) {
    if (node.alive) symbols.push_back({node.id, node.begin, node.end});
  }
}

void BpeModel::tokenize(std::string_view word, std::vector<Token>& tokens) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (const auto found = vocab_.find(std::string(word)); found != vocab_.end()) {
      tokens.push_back({found->second, found->first, 0, word.size()});
      return;
    }
  }
  Symbol cached[WordCache::kMaxSymbols];
  const int count = cache_.find(word, cached);
  if (count >= 0) {
    append_tokens(cached, static_cast<std::size_t>(count), tokens);
    return;
  }
  const std::vector<Symbol> symbols = merge_word(word);
  append_tokens(symbols.data(), symbols.size(), tokens);
  cache_.insert(word, symbols);
}

void BpeModel::append_tokens(const Symbol* symbols, std::size_t count, std::vector<Token>& tokens) const {
  for (std::size_t i = 0; i < count; ++i) {
    tokens.push_back({symbols[i].id, pieces_[static_cast<std::size_t>(symbols[i].id)], symbols[i].begin, symbols[i].end});
  }
}

std::optional<std::int64_t> BpeModel::token_to_id(std::string_view piece) const {
  const auto found = vocab_.find(std::string(piece));
  if (found == vocab_.end()) return std::nullopt;
  return found->second;
}

std::optional<std::string> BpeModel::id_to_piece(std::int64_t id) const {
  if (id < 0 || id >= vocab_size_) return std::nullopt;
  const std::string& piece = pieces_[static_cast<std::size_t>(id)];
  if (piece.empty()) {
    const auto empty = vocab_.find(piece);
    if (empty == vocab_.end() || empty->second != id) return std::nullopt;
  }
  return piece;
}

std::vector<std::int64_t> BpeModel::special_ids() const {
  if (unk_id_) return {*unk_id_};
  return {};
}

}  // namespace headscan
