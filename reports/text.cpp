#include "reports/text.h"

#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "analyzer/checked_file.h"

namespace headscan {

namespace {

// Length of the valid UTF-8 sequence that starts at text[i], or 0 when it is invalid
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned min_second = 0x80, max_second = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) min_second = 0xA0;
    if (lead == 0xED) max_second = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) min_second = 0x90;
    if (lead == 0xF4) max_second = 0x8F;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < min_second || byte(i + 1) > max_second) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

// Appends the character text[i, i + length) as reports show it: a control character escaped (tab
// as "⇥", line feed as "↵", another C0 control or DEL as "\x1B", a C1 control as "\u009B"; DejaVu
// and Noto have no control pictures, U+2400…), any other character as it is.
void append_shown(std::string& out, std::string_view text, std::size_t i, std::size_t length) {
  const auto c = static_cast<unsigned char>(text[i]);
  char escaped[8];
  if (c == '\t') {
    out += "\xE2\x87\xA5";  // ⇥
  } else if (c == '\n') {
    out += "\xE2\x86\xB5";  // ↵
  } else if (c < 0x20 || c == 0x7F) {
    std::snprintf(escaped, sizeof escaped, "\\x%02X", c);
    out += escaped;
  } else if (length == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {  // U+0080…U+009F
    std::snprintf(escaped, sizeof escaped, "\\u00%02X", static_cast<unsigned char>(text[i + 1]));
    out += escaped;
  } else {
    out.append(text, i, length);
  }
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

std::string display_token(std::string_view token, std::size_t max_characters) {
  const std::string text = valid_utf8(token);
  if (!text.empty() && text.find_first_not_of(' ') == std::string::npos) return "\xE2\x90\xA3";  // ␣
  std::string out;
  std::size_t characters = 0;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence_length(text, i);
    if (characters == max_characters) {
      out += "\xE2\x80\xA6";  // …
      break;
    }
    append_shown(out, text, i, length);
    i += length;
    ++characters;
  }
  return out;
}

std::string terminal_text(std::string_view message) {
  const std::string text = valid_utf8(message);
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence_length(text, i);
    append_shown(out, text, i, length);
    i += length;
  }
  return out;
}

std::string escape_html(std::string_view raw) {
  const std::string text = valid_utf8(raw);
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string json_for_script(const nlohmann::ordered_json& value) {
  // Invalid UTF-8 becomes U+FFFD instead of throwing.
  const std::string json = value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::string out;
  out.reserve(json.size() + 64);
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xE2' && i + 2 < json.size() && json[i + 1] == '\x80' && (json[i + 2] == '\xA8' || json[i + 2] == '\xA9')) {
      out += json[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

void write_text_file(const std::filesystem::path& path, const std::string& text) { write_checked_file(path, text); }

}  // namespace headscan
