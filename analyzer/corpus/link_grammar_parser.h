#pragma once
// Plain English text → words and dependency arcs, through link-grammar (DESIGN.md, "Syntactic
// heads"; Debian liblink-grammar-dev with link-grammar-dictionaries-en). link-grammar's headers
// stay in link_grammar_parser.cpp.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzer/corpus/parsed_sentence.h"

namespace headscan {

// The relation a link-grammar link stands for, and which end of the link is the head.
struct LinkRelation {
  std::string relation;  // "nsubj", "obj", "amod", "det", "compound", "advmod", "pobj", "obl"
  bool head_is_left;     // true: the left word of the link is the head, the right one depends on it
};

// DESIGN.md's link-type → relation table. `label` is a link label as linkage_get_link_label gives
// it ("Ss*s", "Ds**x", "MVp", "AN"); its type, the leading uppercase letters ("S", "D", "MV",
// "AN"), must match a row exactly. nullopt: the link gives no arc.
std::optional<LinkRelation> relation_for_link(std::string_view label);

// Byte ranges [begin, end) of the sentences of one line (a line may hold a paragraph), in order.
// A sentence ends after `.`, `!` or `?` (and any closing quotes or brackets right after) followed
// by whitespace or the end of the line; whitespace around sentences belongs to none. A line with
// no such ending is one sentence; a blank line has none. Abbreviations are not recognised:
// "Mr. Smith left." is two sentences.
std::vector<std::pair<std::size_t, std::size_t>> split_sentences(std::string_view line);

struct LineParse {
  ParsedSentence parse;  // words of the whole line (spans relative to the line), arcs from every
                         // parsed sentence; words of unparsed sentences have no arc
  int sentences = 0;     // sentences in the line
  int parsed = 0;        // those with a complete linkage
};

// Owns link-grammar's English dictionary and parse options (loading takes 0.1–0.4 s and ~35 MB), so
// keep a parser. One parser is used from one thread at a time; parsers for other threads share its
// dictionary (sharing_dictionary(): link-grammar only reads a dictionary while parsing, and its
// own multi-thread test parses on ten threads over shared ones).
//
// link-grammar's diagnostics are captured, not printed. Constructing a parser may set the
// process's LC_CTYPE to a UTF-8 locale (link-grammar does so when the program's locale is not
// UTF-8; LC_NUMERIC is left alone): construct parsers before starting other threads.
class LinkGrammarParser {
 public:
  // Throws InputError when the English dictionary cannot be loaded.
  LinkGrammarParser();
  ~LinkGrammarParser();
  LinkGrammarParser(LinkGrammarParser&&) noexcept;
  LinkGrammarParser& operator=(LinkGrammarParser&&) noexcept;

  // Splits `line` into sentences (split_sentences) and parses each with link-grammar, taking the
  // best-cost complete linkage, with no time limit, so that the result does not depend on the
  // machine's load. A sentence that has none (no linkage without null links, or longer than 60
  // words, which is not tried) still gives words, split at whitespace with leading and trailing
  // ASCII punctuation as words of their own, but no arcs.
  LineParse parse_line(std::string_view line);

  // Another parser with the same options and this one's dictionary, for another thread. Make it
  // on this parser's thread.
  LinkGrammarParser sharing_dictionary() const;

 private:
  struct Impl;
  explicit LinkGrammarParser(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace headscan
