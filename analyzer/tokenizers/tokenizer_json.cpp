// Reads Hugging Face tokenizer.json files into a HfTokenizer. Each stage has its own reader
// (normalizer_from_json, pre_tokenizer_from_json, one per model, single_template_from_json); this
// file holds the model switch.

#include "analyzer/tokenizers/tokenizer_json.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "analyzer/tokenizers/models/bpe_model.h"
#include "analyzer/errors.h"
#include "analyzer/json_limits.h"
#include "analyzer/tokenizers/hf_tokenizer.h"
#include "analyzer/tokenizers/processors/post_processors.h"
#include "analyzer/tokenizers/models/unigram_model.h"
#include "analyzer/tokenizers/models/wordlevel_model.h"
#include "analyzer/tokenizers/models/wordpiece_model.h"

namespace headscan {
namespace {

constexpr const char* kSupportedModels = "BPE, WordPiece, Unigram, WordLevel";
constexpr const char* kWhatToDo = "give the tokenizer.json that the tokenizers library saved for this model";

std::string describe_json(const nlohmann::json* found) {
  if (found == nullptr) return "nothing (the field is missing)";
  return std::string(found->type_name()) + " " + quote_json(*found);
}

// Files written before the tokenizers library stored "type" are recognised by their fields.
std::string model_type(const nlohmann::json& spec, const std::string& origin) {
  if (spec.contains("type")) return component_type(spec, origin, "model");
  if (spec.contains("merges")) return "BPE";
  if (spec.contains("vocab") && spec["vocab"].is_array()) return "Unigram";
  if (spec.contains("continuing_subword_prefix")) return "WordPiece";
  return "WordLevel";
}

std::unique_ptr<TokenizerModel> model_from_json(const nlohmann::json* spec, const std::string& origin) {
  if (spec == nullptr || !spec->is_object()) {
    throw_bad_field(origin, "model", "an object describing the tokenizer model", spec);
  }
  const std::string type = model_type(*spec, origin);
  if (type == "BPE") return BpeModel::from_json(*spec, origin);
  if (type == "WordPiece") return WordPieceModel::from_json(*spec, origin);
  if (type == "Unigram") return UnigramModel::from_json(*spec, origin);
  if (type == "WordLevel") return WordLevelModel::from_json(*spec, origin);
  throw_unsupported_type(origin, "model", "model", type, kSupportedModels);
}

const nlohmann::json* field(const nlohmann::json& object, const char* name) {
  const auto found = object.find(name);
  return found == object.end() ? nullptr : &*found;
}

// Whether a normalizer or pre-tokenizer `spec` is ByteLevel or a Sequence holding one (its
// members are under `members`: "normalizers", "pretokenizers"); such tokenizers spell their
// pieces in the byte-level alphabet.
bool is_byte_level(const nlohmann::json* spec, const char* members) {
  if (spec == nullptr || !spec->is_object()) return false;
  const nlohmann::json* type = field(*spec, "type");
  if (type != nullptr && *type == "ByteLevel") return true;
  const nlohmann::json* list = field(*spec, members);
  if (list == nullptr || !list->is_array()) return false;
  return std::any_of(list->begin(), list->end(),
                     [members](const nlohmann::json& member) { return is_byte_level(&member, members); });
}

}  // namespace

std::string component_type(const nlohmann::json& spec, const std::string& origin, const std::string& where) {
  if (!spec.is_object()) throw_bad_field(origin, where, "an object with a \"type\"", &spec);
  const nlohmann::json* type = field(spec, "type");
  if (type == nullptr || !type->is_string()) throw_bad_field(origin, where + ".type", "a type name", type);
  return type->get<std::string>();
}

void throw_unsupported_type(const std::string& origin, const std::string& where, const std::string& kind,
                            const std::string& type, const std::string& supported) {
  throw InputError(origin + ": unsupported " + kind + " type \"" + type + "\" (in " + where +
                   "); supported: " + supported + ". Give a tokenizer.json whose " + kind + " is one of these");
}

void throw_bad_field(const std::string& origin, const std::string& where, const std::string& expected,
                     const nlohmann::json* found) {
  throw InputError(origin + ": expected " + where + " to be " + expected + ", found " + describe_json(found) + "; " +
                   kWhatToDo);
}

std::unordered_map<std::string, std::int64_t> read_vocab(const nlohmann::json& model, const std::string& origin,
                                                         const std::string& entries) {
  const auto field = model.find("vocab");
  if (field == model.end() || !field->is_object()) {
    throw_bad_field(origin, "model.vocab", "an object mapping each " + entries + " to its id",
                    field == model.end() ? nullptr : &*field);
  }
  std::unordered_map<std::string, std::int64_t> vocab;
  vocab.reserve(field->size());
  std::int64_t largest = -1;
  const std::string* largest_piece = nullptr;
  for (const auto& [piece, id] : field->items()) {
    const std::int64_t value = token_id(id, origin, "model.vocab[" + quote_json(piece) + "]");
    const auto [entry, inserted] = vocab.emplace(piece, value);
    if (inserted && value > largest) {
      largest = value;
      largest_piece = &entry->first;
    }
  }
  if (largest_piece != nullptr) {
    check_id_density(largest, vocab.size(), origin, "model.vocab[" + quote_json(*largest_piece) + "]");
  }
  return vocab;
}

std::int64_t token_id(const nlohmann::json& value, const std::string& origin, const std::string& where) {
  const bool in_range =
      value.is_number_unsigned()  ? value.get<std::uint64_t>() < static_cast<std::uint64_t>(kTokenIdLimit)
      : value.is_number_integer() ? value.get<std::int64_t>() >= 0 && value.get<std::int64_t>() < kTokenIdLimit
                                  : false;
  if (!in_range) {
    throw_bad_field(origin, where, "an integer id from 0 to " + std::to_string(kTokenIdLimit - 1), &value);
  }
  return value.get<std::int64_t>();
}

void check_id_density(std::int64_t largest_id, std::size_t tokens, const std::string& origin,
                      const std::string& where) {
  const std::int64_t bound = kTokenIdSlack + 2 * static_cast<std::int64_t>(tokens);
  if (largest_id >= bound) {
    throw InputError(origin + ": expected " + where + " to be an id below " + std::to_string(bound) +
                     " (twice the " + std::to_string(tokens) + " tokens, plus " + std::to_string(kTokenIdSlack) +
                     "), found " + std::to_string(largest_id) + "; ids index tables of one entry per id, so ids far "
                     "beyond the number of tokens are refused: " + kWhatToDo);
  }
}

namespace {

// Added tokens take the ids the tokenizers library gives them when it loads the file, whatever
// their "id" says (the library only logs a warning; tokenizer/serialization.rs and
// AddedVocabulary::add_tokens): the model's id for a piece in its vocabulary, the id given to the
// same content before, else the next id after the vocabulary and the added tokens before it, in
// file order. Files the library writes hold exactly these ids; a hand-edited file that does not
// would otherwise feed the model ids that transformers never gives it.
void assign_added_token_ids(std::vector<AddedToken>& tokens, const TokenizerModel& model) {
  std::unordered_map<std::string, std::int64_t> assigned;
  std::int64_t next = model.vocab_size();
  for (AddedToken& token : tokens) {
    if (const auto known = assigned.find(token.content); known != assigned.end()) {
      token.id = known->second;
    } else if (const std::optional<std::int64_t> id = model.token_to_id(token.content)) {
      token.id = *id;
    } else {
      token.id = next;
    }
    assigned.emplace(token.content, token.id);
    next = std::max(next, token.id + 1);
  }
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_hf_json(std::string_view json_text, const std::string& origin) {
  check_json_depth(json_text, origin);
  nlohmann::json spec;
  try {
    spec = nlohmann::json::parse(json_text.begin(), json_text.end());
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
    std::string detail = e.what();
    const std::size_t prefix_end = detail.find("] ");  // drop "[json.exception.parse_error.101] "
    if (prefix_end != std::string::npos) detail = detail.substr(prefix_end + 2);
    throw InputError(origin + ": expected a Hugging Face tokenizer.json, found malformed JSON (" + detail + "); " +
                     kWhatToDo);
  }
  if (!spec.is_object()) throw_bad_field(origin, "the file", "a JSON object (a Hugging Face tokenizer.json)", &spec);

  try {
    std::vector<AddedToken> added_tokens = added_tokens_from_json(field(spec, "added_tokens"), origin);
    const nlohmann::json null_spec;
    const nlohmann::json* normalizer = field(spec, "normalizer");
    const nlohmann::json* pre_tokenizer = field(spec, "pre_tokenizer");
    auto model = model_from_json(field(spec, "model"), origin);
    for (std::size_t i = 0; i < added_tokens.size(); ++i) {
      const std::int64_t tokens = model->vocab_size() + static_cast<std::int64_t>(added_tokens.size());
      check_id_density(added_tokens[i].id, static_cast<std::size_t>(tokens), origin,
                       "added_tokens[" + std::to_string(i) + "].id");
    }
    assign_added_token_ids(added_tokens, *model);
    SingleTemplate single_template = single_template_from_json(field(spec, "post_processor"), origin);
    const bool byte_level = is_byte_level(normalizer, "normalizers") || is_byte_level(pre_tokenizer, "pretokenizers");
    return std::make_unique<HfTokenizer>(
        std::move(added_tokens), normalizer_from_json(normalizer ? *normalizer : null_spec, origin),
        pre_tokenizer_from_json(pre_tokenizer ? *pre_tokenizer : null_spec, origin), std::move(model),
        std::move(single_template), byte_level);
  } catch (const nlohmann::json::exception& e) {  // a field of an unexpected JSON type we did not check
    throw InputError(origin + ": expected a Hugging Face tokenizer.json, found " + e.what() + "; " + kWhatToDo);
  }
}

}  // namespace headscan
