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

// The model's "vocab" object (piece → non-negative id). `entries` names what the pieces are
// ("word", "piece", "token") in the error when the field is missing or malformed.
std::unordered_map<std::string, std::int64_t> read_vocab(const nlohmann::json& model, const std::string& origin,
                                                         const std::string& entries);

}  // namespace headscan
