// The Unicode normalization forms (NFC, NFD, NFKC, NFKD) through utf8proc, with alignment to the
// original bytes kept per run of characters that normalize together.

#include <algorithm>
#include <string_view>
#include <vector>

#include <utf8proc.h>

#include "analyzer/tokenizers/normalizers/normalizers.h"

namespace headscan {
namespace {

utf8proc_option_t options_for(UnicodeNormalizer::Form form) {
  const int stable = UTF8PROC_STABLE;
  switch (form) {
    case UnicodeNormalizer::Form::nfc:
      return static_cast<utf8proc_option_t>(stable | UTF8PROC_COMPOSE);
    case UnicodeNormalizer::Form::nfd:
      return static_cast<utf8proc_option_t>(stable | UTF8PROC_DECOMPOSE);
    case UnicodeNormalizer::Form::nfkc:
      return static_cast<utf8proc_option_t>(stable | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
    case UnicodeNormalizer::Form::nfkd:
      return static_cast<utf8proc_option_t>(stable | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
  }
  return UTF8PROC_STABLE;
}

// Normalizes valid UTF-8 with one reusable buffer (utf8proc_map would allocate on every call).
class FormBuffer {
 public:
  explicit FormBuffer(utf8proc_option_t options) : options_(options), code_points_(64) {}

  // The normal form of `bytes` (valid UTF-8); valid until the next call.
  std::string_view normalize(std::string_view bytes) {
    const auto* input = reinterpret_cast<const utf8proc_uint8_t*>(bytes.data());
    const auto length = static_cast<utf8proc_ssize_t>(bytes.size());
    utf8proc_ssize_t count = utf8proc_decompose(input, length, code_points_.data(),
                                                static_cast<utf8proc_ssize_t>(code_points_.size()), options_);
    if (count > static_cast<utf8proc_ssize_t>(code_points_.size())) {
      code_points_.resize(static_cast<std::size_t>(count));
      count = utf8proc_decompose(input, length, code_points_.data(), count, options_);
    }
    if (count < 0) return bytes;  // not valid UTF-8: callers only pass valid text
    const utf8proc_ssize_t encoded = utf8proc_reencode(code_points_.data(), count, options_);
    if (encoded < 0) return bytes;
    return {reinterpret_cast<const char*>(code_points_.data()), static_cast<std::size_t>(encoded)};
  }

 private:
  utf8proc_option_t options_;
  std::vector<utf8proc_int32_t> code_points_;
};

bool is_ascii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// Whether a new run may start at `current` (the character after `previous`): it is a starter and
// the pair normalizes to the concatenation of the two normal forms, so nothing composes or
// reorders across the boundary. Below U+0300 every character is a starter that never combines
// with what precedes it.
bool starts_new_run(FormBuffer& forms, std::string_view previous, const Utf8Char& current,
                    std::string_view current_bytes) {
  if (current.code_point < 0x300) return true;
  if (utf8proc_get_property(static_cast<utf8proc_int32_t>(current.code_point))->combining_class != 0) return false;
  std::string separate(forms.normalize(previous));
  separate.append(forms.normalize(current_bytes));
  std::string pair(previous);
  pair.append(current_bytes);
  return forms.normalize(pair) == separate;
}

// Rewrites the run [begin, end) of `text` (valid UTF-8) into `builder`.
void normalize_run(const std::string& text, std::size_t begin, std::size_t end, FormBuffer& forms,
                   NormalizedString::Builder& builder) {
  const std::string_view run = std::string_view(text).substr(begin, end - begin);
  const std::string whole(forms.normalize(run));
  if (whole == run) {
    builder.copy(begin, end);
    return;
  }
  // Character by character when that gives the same text: finer spans (as Hugging Face aligns
  // each character of a decomposition to the character it came from).
  std::string by_character;
  std::vector<std::size_t> boundaries;  // start of each character's output in by_character
  for (std::size_t pos = begin; pos < end;) {
    const std::size_t length = decode_utf8(text, pos).length;
    boundaries.push_back(by_character.size());
    by_character.append(forms.normalize(run.substr(pos - begin, length)));
    pos += length;
  }
  if (by_character != whole) {
    builder.append(whole, begin, end);
    return;
  }
  std::size_t index = 0;
  for (std::size_t pos = begin; pos < end; ++index) {
    const std::size_t length = decode_utf8(text, pos).length;
    const std::size_t out_end = index + 1 < boundaries.size() ? boundaries[index + 1] : by_character.size();
    const std::string_view output = std::string_view(by_character).substr(boundaries[index], out_end - boundaries[index]);
    if (output == run.substr(pos - begin, length)) {
      builder.copy(pos, pos + length);
    } else if (!output.empty()) {
      builder.append(output, pos, pos + length);
    }
    pos += length;
  }
}

}  // namespace

void UnicodeNormalizer::normalize(NormalizedString& text) const {
  const std::string& bytes = text.text();
  if (is_ascii(bytes)) return;  // ASCII is in every normal form
  FormBuffer forms(options_for(form_));

  NormalizedString::Builder builder(text);
  std::size_t run_begin = 0;
  std::size_t previous_begin = 0;  // the last valid character, for the boundary test
  bool have_run = false;
  for (std::size_t pos = 0; pos < bytes.size();) {
    const Utf8Char character = decode_utf8(bytes, pos);
    if (!character.valid) {  // invalid bytes stand alone and pass through
      if (have_run) normalize_run(bytes, run_begin, pos, forms, builder);
      builder.copy(pos, pos + character.length);
      have_run = false;
      pos += character.length;
      continue;
    }
    const std::string_view current = std::string_view(bytes).substr(pos, character.length);
    if (have_run &&
        starts_new_run(forms, std::string_view(bytes).substr(previous_begin, pos - previous_begin), character, current)) {
      normalize_run(bytes, run_begin, pos, forms, builder);
      have_run = false;
    }
    if (!have_run) {
      run_begin = pos;
      have_run = true;
    }
    previous_begin = pos;
    pos += character.length;
  }
  if (have_run) normalize_run(bytes, run_begin, bytes.size(), forms, builder);
  text = builder.finish();
}

}  // namespace headscan
