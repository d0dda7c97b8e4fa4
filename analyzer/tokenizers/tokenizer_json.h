#pragma once
// Helpers shared by the readers of tokenizer.json components (normalizers, pre-tokenizers,
// models), so that every error names the file, the field, what was found and what is supported.

#include <cstdint>
#include <string>
#include <unordered_map>

#include <nlohmann/json_fwd.hpp>

namespace headscan {

// The "type" string of the component `spec` found at field `where`. Throws InputError if `spec`
// is not an object with a string "type".
std::string component_type(const nlohmann::json& spec, const std::string& origin, const std::string& where);

// Throws InputError: `where` has a `kind` type that headscan does not support, listing
// `supported` (e.g. "Lowercase, Sequence").
[[noreturn]] void throw_unsupported_type(const std::string& origin, const std::string& where, const std::string& kind,
                                         const std::string& type, const std::string& supported);

// Throws InputError: field `where` is missing or malformed; `expected` says what it should be.
[[noreturn]] void throw_bad_field(const std::string& origin, const std::string& where, const std::string& expected,
                                  const nlohmann::json* found);

// Token ids index tables of one entry per id (pieces, document frequencies, idf), so the ids of a
// tokenizer.json are bounded: every id is below kTokenIdLimit, and the largest is below
// kTokenIdSlack + 2 × the number of tokens. Real vocabularies are dense (ids 0 … n−1, added tokens
// just after), and their largest has about 260,000 tokens.
constexpr std::int64_t kTokenIdLimit = std::int64_t{1} << 24;
constexpr std::int64_t kTokenIdSlack = 65536;

// The id at field `where`: an integer in [0, kTokenIdLimit). Throws InputError naming `where`
// and the value otherwise.
std::int64_t token_id(const nlohmann::json& value, const std::string& origin, const std::string& where);

// Throws InputError naming `where` (the token with the largest id) when `largest_id` is not below
// kTokenIdSlack + 2 × `tokens`.
void check_id_density(std::int64_t largest_id, std::size_t tokens, const std::string& origin,
                      const std::string& where);

// The model's "vocab" object (piece → id, both limits above). `entries` names what the pieces are
// ("word", "piece", "token") in the error when the field is missing or malformed.
std::unordered_map<std::string, std::int64_t> read_vocab(const nlohmann::json& model, const std::string& origin,
                                                         const std::string& entries);

}  // namespace headscan
