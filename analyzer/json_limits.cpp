#include "analyzer/json_limits.h"

#include <nlohmann/json.hpp>

#include "analyzer/errors.h"

namespace headscan {
namespace {

std::string dump_string(std::string_view text, std::size_t max_chars) {
  // A cut may split a UTF-8 sequence: replace the broken bytes rather than throw.
  return nlohmann::json(std::string(text.substr(0, max_chars + 1)))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Appends `value` to `out` until `out` holds more than `limit` characters. Each level of nesting
// appends at least one character, so the recursion is at most `limit` deep.
void append_bounded(const nlohmann::json& value, std::string& out, std::size_t limit) {
  if (out.size() > limit) return;
  if (value.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = value.begin(); it != value.end() && out.size() <= limit; ++it) {
      if (!first) out += ',';
      first = false;
      out += dump_string(it.key(), limit);
      out += ':';
      append_bounded(it.value(), out, limit);
    }
    out += '}';
  } else if (value.is_array()) {
    out += '[';
    bool first = true;
    for (auto it = value.begin(); it != value.end() && out.size() <= limit; ++it) {
      if (!first) out += ',';
      first = false;
      append_bounded(*it, out, limit);
    }
    out += ']';
  } else if (value.is_string()) {
    out += dump_string(value.get_ref<const std::string&>(), limit);
  } else {
    out += value.dump();
  }
}

}  // namespace

void check_json_depth(std::string_view text, const std::string& origin, int max_depth) {
  int depth = 0;
  std::size_t line = 1;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (in_string) {
      if (c == '\\') {
        ++i;  // an escaped character (never a line break: JSON strings hold none raw)
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        throw InputError(origin + ":" + std::to_string(line) + ": expected JSON nested at most " +
                         std::to_string(max_depth) + " deep, found deeper arrays or objects; this is not a file a "
                         "tokenizer or exporter writes: give the original file");
      }
    } else if (c == ']' || c == '}') {
      if (depth > 0) --depth;
    }
  }
}

std::string quote_json(const nlohmann::json& value, std::size_t max_chars) {
  std::string text;
  append_bounded(value, text, max_chars);
  if (text.size() > max_chars) {
    std::size_t cut = max_chars >= 3 ? max_chars - 3 : 0;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // whole characters
    text = text.substr(0, cut) + "...";
  }
  return text;
}

}  // namespace headscan
