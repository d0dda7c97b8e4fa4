#include "analyzer/tokenizers/regex.h"

#include "analyzer/tokenizers/unicode.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdexcept>

#include "analyzer/errors.h"

namespace headscan {

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

Regex::Regex(const std::string& pattern, std::string source)
    : pattern_(pattern), source_(std::move(source)), compiled_(std::make_unique<Compiled>()) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  // MATCH_INVALID_UTF: a tokenizer may be handed raw bytes (headscan tokenize TEXT); they must
  // not make matching fail or read out of bounds.
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                  PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error_code, &error_offset, nullptr);
  if (compiled_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof message);
    throw std::invalid_argument("regex /" + pattern + "/ does not compile at offset " + std::to_string(error_offset) +
                                ": " + reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if JIT is unavailable
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

namespace {

using MatchData = std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)>;

// Match data per call, not per Regex: the compiled code is shared and read-only, so matching
// from several threads at once is safe.
MatchData make_match_data(const pcre2_code* code) {
  MatchData match(pcre2_match_data_create_from_pattern(code, nullptr), &pcre2_match_data_free);
  if (!match) throw std::bad_alloc();
  return match;
}

bool is_resource_limit(int error) {
  return error == PCRE2_ERROR_MATCHLIMIT || error == PCRE2_ERROR_DEPTHLIMIT || error == PCRE2_ERROR_HEAPLIMIT ||
         error == PCRE2_ERROR_JIT_STACKLIMIT;
}

// The pattern in a message: long ones are cut, the limit applies to what the message quotes.
std::string quoted(const std::string& pattern) {
  constexpr std::size_t kShown = 120;
  return "/" + (pattern.size() > kShown ? pattern.substr(0, kShown) + "..." : pattern) + "/";
}

// PCRE2's limits are kept at their defaults (10 million match steps): raising them turns an
// exponential search from a few seconds into minutes, and no tokenizer's own pattern comes near.
std::optional<ByteSpan> find_with(const pcre2_code* code, pcre2_match_data* match, const std::string& pattern,
                                  const std::string& source, std::string_view text, std::size_t start) {
  const int result =
      pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), start, 0, match, nullptr);
  if (result == PCRE2_ERROR_NOMATCH) return std::nullopt;
  if (result < 0) {
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(result, buffer, sizeof buffer);
    const std::string message = reinterpret_cast<const char*>(buffer);
    if (is_resource_limit(result)) {
      throw InputError((source.empty() ? std::string("regex ") : source + ": regex ") + quoted(pattern) +
                       " gave up on a text of " + std::to_string(text.size()) + " bytes: " + message +
                       " (the pattern backtracks without bound on this text, e.g. a nested repetition like (a+)+); "
                       "give a tokenizer whose pattern has no nested repetition, or leave this text out");
    }
    throw std::runtime_error("regex " + quoted(pattern) + " failed: " + message);
  }
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
  return ByteSpan{ovector[0], ovector[1]};
}

}  // namespace

std::optional<ByteSpan> Regex::find(std::string_view text, std::size_t start) const {
  MatchData match = make_match_data(compiled_->code);
  return find_with(compiled_->code, match.get(), pattern_, source_, text, start);
}

std::vector<ByteSpan> Regex::find_all(std::string_view text) const {
  MatchData match = make_match_data(compiled_->code);
  std::vector<ByteSpan> matches;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::optional<ByteSpan> found = find_with(compiled_->code, match.get(), pattern_, source_, text, start);
    if (!found) break;
    matches.push_back(*found);
    if (found->end > found->begin) {
      start = found->end;
    } else if (found->end < text.size()) {
      start = found->end + decode_utf8(text, found->end).length;
    } else {
      break;
    }
  }
  return matches;
}

}  // namespace headscan
