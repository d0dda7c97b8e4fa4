#pragma once
// Text from the corpus or the model, made safe to show (valid UTF-8, visible control characters,
// escaped for HTML and for JSON inside <script>), and written to files.

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace headscan {

// Replaces every invalid UTF-8 sequence with U+FFFD.
std::string valid_utf8(std::string_view text);

// A token as shown in tables, viewers and plots: valid UTF-8, tab as "⇥", newline as "↵", other
// control characters as "\x01" (C1 ones as "\u009B"), a token of only spaces as "␣", at most
// `max_characters` code points (then "…").
std::string display_token(std::string_view token, std::size_t max_characters = 24);

// A message as printed on a terminal: valid UTF-8, every control character escaped as
// display_token() escapes it, so that text from input files (a BOS token, a file name, a shard's
// warning) can neither move the cursor, recolour, retitle the terminal nor start a line of its own.
std::string terminal_text(std::string_view message);

// Escapes & < > " ' for HTML text and attribute values (after valid_utf8).
std::string escape_html(std::string_view text);

// JSON for embedding in HTML <script> or in a .js file: every '<', '>' and '&' written as \u003c,
// \u003e, \u0026 (they occur only inside strings), so no "</script>" or "<!--" can end or bend
// the script; also U+2028/U+2029 escaped for older JavaScript parsers.
std::string json_for_script(const nlohmann::ordered_json& value);

// Writes `text` as the whole file; throws std::runtime_error naming the file when it cannot.
void write_text_file(const std::filesystem::path& path, const std::string& text);

}  // namespace headscan
