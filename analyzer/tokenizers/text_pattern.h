#pragma once
// Patterns that cut or rewrite text, as Hugging Face's tokenizers define them: the {"String": …} or
// {"Regex": …} pattern of the Split pre-tokenizer and the Replace normalizer, and character
// predicates (whitespace, punctuation, digits). A pattern reports its matches together with the
// text between them; a SplitBehavior says what becomes of each.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyzer/tokenizers/normalized_string.h"
#include "analyzer/tokenizers/regex.h"

namespace headscan {

// One piece of a text: a match of the pattern, or the text between two matches.
struct PatternMatch {
  ByteSpan span;
  bool is_match = false;
};

class TextPattern {
 public:
  // A literal string, matched left to right without overlaps.
  static TextPattern literal(std::string text);
  // A PCRE2 pattern (Hugging Face compiles it with Oniguruma; the patterns tokenizers ship, such
  // as GPT-2's and Llama 3's, mean the same in both). Throws std::invalid_argument if it does not
  // compile. `source` names the pattern's file and field in errors while matching (Regex).
  static TextPattern regex(const std::string& pattern, std::string source = {});
  // The "pattern" field {"String": "…"} or {"Regex": "…"}. Throws InputError otherwise.
  static TextPattern from_json(const nlohmann::json& spec, const std::string& origin, const std::string& where);

  // The pieces of `text` left to right, covering it: Hugging Face's Pattern::find_matches (an
  // empty text gives one empty non-match; an empty literal matches nothing).
  std::vector<PatternMatch> find_matches(std::string_view text) const;

 private:
  std::string literal_;
  std::optional<Regex> regex_;
};

// Every character for which `predicate` holds is a match of its own (Hugging Face's Pattern for
// Fn(char) -> bool). Invalid bytes never match.
std::vector<PatternMatch> find_character_matches(std::string_view text, const std::function<bool(char32_t)>& predicate);

// Flips is_match (Hugging Face's Invert pattern).
void invert_matches(std::vector<PatternMatch>& matches);

// What Split does with the matches (Hugging Face's SplitDelimiterBehavior).
enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

// From "Removed", "Isolated", "MergedWithPrevious", "MergedWithNext" or "Contiguous"; throws
// InputError naming `where` otherwise.
SplitBehavior split_behavior_from_json(const nlohmann::json* spec, const std::string& origin, const std::string& where);

// Cuts `text` at `matches` (from find_matches on text.text()) according to `behavior` and appends
// the non-empty pieces to `words` (Hugging Face's NormalizedString::split).
void split_on_matches(const NormalizedString& text, const std::vector<PatternMatch>& matches, SplitBehavior behavior,
                      std::vector<NormalizedString>& words);

}  // namespace headscan
