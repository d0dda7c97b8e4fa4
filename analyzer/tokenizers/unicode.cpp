#include "analyzer/tokenizers/unicode.h"

#include <algorithm>
#include <iterator>

#include <utf8proc.h>

namespace headscan {
namespace {

// Table 3-7 of the Unicode standard: the lead byte fixes the length and the allowed range of the
// second byte; every later byte is 80..BF. Lead bytes not listed (80..C1, F5..FF) are invalid.
struct LeadByte {
  unsigned char first, last;
  std::size_t length;
  unsigned char second_low, second_high;
};

// clang-format off
constexpr LeadByte kLeadBytes[] = {
    {0xC2, 0xDF, 2, 0x80, 0xBF},
    {0xE0, 0xE0, 3, 0xA0, 0xBF},  // no overlong forms
    {0xE1, 0xEC, 3, 0x80, 0xBF},
    {0xED, 0xED, 3, 0x80, 0x9F},  // no surrogates
    {0xEE, 0xEF, 3, 0x80, 0xBF},
    {0xF0, 0xF0, 4, 0x90, 0xBF},  // no overlong forms
    {0xF1, 0xF3, 4, 0x80, 0xBF},
    {0xF4, 0xF4, 4, 0x80, 0x8F},  // nothing above U+10FFFF
};
// clang-format on

}  // namespace

Utf8Char decode_utf8(std::string_view text, std::size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return {lead, 1, true, false};
  const auto lead_byte = std::find_if(std::begin(kLeadBytes), std::end(kLeadBytes), [lead](const LeadByte& entry) {
    return lead >= entry.first && lead <= entry.last;
  });
  if (lead_byte == std::end(kLeadBytes)) return {0xFFFD, 1, false, false};

  const std::size_t length = lead_byte->length;
  char32_t code_point = lead & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07);
  for (std::size_t k = 1; k < length; ++k) {
    if (pos + k >= text.size()) return {0xFFFD, k, false, true};
    const auto byte = static_cast<unsigned char>(text[pos + k]);
    const unsigned char low = k == 1 ? lead_byte->second_low : 0x80;
    const unsigned char high = k == 1 ? lead_byte->second_high : 0xBF;
    if (byte < low || byte > high) return {0xFFFD, k, false, false};
    code_point = (code_point << 6) | (byte & 0x3F);
  }
  return {code_point, length, true, false};
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

bool is_unicode_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

void append_lowercase(std::string& out, char32_t c) {
  // SpecialCasing.txt has one unconditional lowercase mapping longer than a character, and Rust's
  // char::to_lowercase (used by Hugging Face's Lowercase) applies it: İ → i + COMBINING DOT ABOVE.
  if (c == 0x0130) {
    out += "i\xCC\x87";
    return;
  }
  append_utf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
}

namespace {

utf8proc_category_t category_of(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

}  // namespace

bool is_unicode_punctuation(char32_t c) {
  switch (category_of(c)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

bool is_bert_punctuation(char32_t c) {
  // Rust's char::is_ascii_punctuation: the ASCII symbols $+<=>^`|~ are Sc/Sm/Sk, not P*.
  const bool ascii_punctuation =
      (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
  return ascii_punctuation || is_unicode_punctuation(c);
}

bool is_unicode_numeric(char32_t c) {
  const utf8proc_category_t category = category_of(c);
  return category == UTF8PROC_CATEGORY_ND || category == UTF8PROC_CATEGORY_NL || category == UTF8PROC_CATEGORY_NO;
}

bool is_unicode_mark(char32_t c) {
  const utf8proc_category_t category = category_of(c);
  return category == UTF8PROC_CATEGORY_MN || category == UTF8PROC_CATEGORY_MC || category == UTF8PROC_CATEGORY_ME;
}

bool is_nonspacing_mark(char32_t c) { return category_of(c) == UTF8PROC_CATEGORY_MN; }

bool is_unicode_other(char32_t c) {
  switch (category_of(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
      return true;
    default:
      return false;
  }
}

}  // namespace headscan
