#pragma once
// Bounds on the JSON files headscan reads from untrusted sources (tokenizer.json, headscan.json),
// checked before nlohmann::json builds a document, and quoting of JSON values in error messages.
// nlohmann parses iteratively, but serializing a value (dump()) and headscan's own readers of
// nested components recurse: a 100,000-deep array would overflow the stack (issue 12).

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace headscan {

// Deepest nesting of arrays and objects accepted. Real tokenizer.json files nest about 6 deep.
constexpr int kMaxJsonDepth = 512;

// Throws InputError ("<origin>:<line>: expected JSON nested at most 512 deep, …") when arrays and
// objects in `text` nest deeper than `max_depth`. A linear scan of the text that ignores brackets
// inside strings; it does not check the rest of the syntax (the parser does).
void check_json_depth(std::string_view text, const std::string& origin, int max_depth = kMaxJsonDepth);

// `value` as compact JSON, cut to at most `max_chars` characters ("…" ends a cut text); for error
// messages. Serializes only what it shows, so its cost and recursion are bounded by `max_chars`,
// never by the size or depth of `value`.
std::string quote_json(const nlohmann::json& value, std::size_t max_chars = 60);

}  // namespace headscan
