#include "analyzer/tokenizers/text_pattern.h"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/tokenizers/tokenizer_json.h"

namespace headscan {
namespace {

// Matches (non-empty or empty) to the covering list of pieces.
std::vector<PatternMatch> with_gaps(std::string_view text, const std::vector<ByteSpan>& found) {
  std::vector<PatternMatch> pieces;
  pieces.reserve(2 * found.size() + 1);
  std::size_t previous = 0;
  for (const ByteSpan& match : found) {
    if (match.begin != previous) pieces.push_back({{previous, match.begin}, false});
    pieces.push_back({match, true});
    previous = match.end;
  }
  if (previous != text.size()) pieces.push_back({{previous, text.size()}, false});
  return pieces;
}

}  // namespace

TextPattern TextPattern::literal(std::string text) {
  TextPattern pattern;
  pattern.literal_ = std::move(text);
  return pattern;
}

TextPattern TextPattern::regex(const std::string& pattern_text, std::string source) {
  TextPattern pattern;
  pattern.regex_.emplace(pattern_text, std::move(source));
  return pattern;
}

TextPattern TextPattern::from_json(const nlohmann::json& spec, const std::string& origin, const std::string& where) {
  const char* expected = "{\"String\": \"…\"} or {\"Regex\": \"…\"}";
  if (!spec.is_object() || spec.size() != 1) throw_bad_field(origin, where, expected, &spec);
  const std::string kind = spec.begin().key();
  const nlohmann::json& value = spec.begin().value();
  if (!value.is_string()) throw_bad_field(origin, where, expected, &spec);
  if (kind == "String") return literal(value.get<std::string>());
  if (kind != "Regex") throw_bad_field(origin, where, expected, &spec);
  try {
    return regex(value.get<std::string>(), origin + ": " + where);
  } catch (const std::invalid_argument& e) {
    throw InputError(origin + ": " + where + ": " + e.what() +
                     "; headscan matches Hugging Face's Oniguruma patterns with PCRE2, give a pattern both accept");
  }
}

std::vector<PatternMatch> TextPattern::find_matches(std::string_view text) const {
  if (text.empty()) return {{{0, 0}, false}};
  if (regex_) return with_gaps(text, regex_->find_all(text));
  if (literal_.empty()) return {{{0, text.size()}, false}};
  std::vector<ByteSpan> found;
  for (std::size_t pos = text.find(literal_); pos != std::string_view::npos; pos = text.find(literal_, pos)) {
    found.push_back({pos, pos + literal_.size()});
    pos += literal_.size();
  }
  return with_gaps(text, found);
}

std::vector<PatternMatch> find_character_matches(std::string_view text,
                                                 const std::function<bool(char32_t)>& predicate) {
  if (text.empty()) return {{{0, 0}, false}};
  std::vector<ByteSpan> found;
  for (std::size_t pos = 0; pos < text.size();) {
    const Utf8Char character = decode_utf8(text, pos);
    if (character.valid && predicate(character.code_point)) found.push_back({pos, pos + character.length});
    pos += character.length;
  }
  return with_gaps(text, found);
}

void invert_matches(std::vector<PatternMatch>& matches) {
  for (PatternMatch& match : matches) match.is_match = !match.is_match;
}

SplitBehavior split_behavior_from_json(const nlohmann::json* spec, const std::string& origin,
                                       const std::string& where) {
  const char* expected = "one of \"Removed\", \"Isolated\", \"MergedWithPrevious\", \"MergedWithNext\", \"Contiguous\"";
  if (spec == nullptr || !spec->is_string()) throw_bad_field(origin, where, expected, spec);
  const std::string name = spec->get<std::string>();
  if (name == "Removed") return SplitBehavior::removed;
  if (name == "Isolated") return SplitBehavior::isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
  if (name == "MergedWithNext") return SplitBehavior::merged_with_next;
  if (name == "Contiguous") return SplitBehavior::contiguous;
  throw_bad_field(origin, where, expected, spec);
}

void split_on_matches(const NormalizedString& text, const std::vector<PatternMatch>& matches, SplitBehavior behavior,
                      std::vector<NormalizedString>& words) {
  // (span, keep) pieces, as in Hugging Face's NormalizedString::split.
  std::vector<PatternMatch> pieces;  // is_match reused as "remove"
  pieces.reserve(matches.size());
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::removed:
      pieces = matches;
      break;
    case SplitBehavior::isolated:
      for (const PatternMatch& match : matches) pieces.push_back({match.span, false});
      break;
    case SplitBehavior::contiguous:
      for (const PatternMatch& match : matches) {
        if (match.is_match == previous_match && !pieces.empty()) {
          pieces.back().span.end = match.span.end;
        } else {
          pieces.push_back({match.span, false});
        }
        previous_match = match.is_match;
      }
      break;
    case SplitBehavior::merged_with_previous:
      for (const PatternMatch& match : matches) {
        if (match.is_match && !previous_match && !pieces.empty()) {
          pieces.back().span.end = match.span.end;
        } else {
          pieces.push_back({match.span, false});
        }
        previous_match = match.is_match;
      }
      break;
    case SplitBehavior::merged_with_next:
      for (auto match = matches.rbegin(); match != matches.rend(); ++match) {
        if (match->is_match && !previous_match && !pieces.empty()) {
          pieces.back().span.begin = match->span.begin;
        } else {
          pieces.push_back({match->span, false});
        }
        previous_match = match->is_match;
      }
      std::reverse(pieces.begin(), pieces.end());
      break;
  }
  for (const PatternMatch& piece : pieces) {
    if (!piece.is_match && piece.span.end > piece.span.begin) words.push_back(text.slice(piece.span.begin, piece.span.end));
  }
}

}  // namespace headscan
