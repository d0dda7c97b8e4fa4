#include "analyzer/corpus/conllu.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzer/corpus/text_lines.h"
#include "analyzer/errors.h"

namespace headscan {
namespace {

constexpr const char* kExpected = "expected a UTF-8 CoNLL-U file (Universal Dependencies)";
// Words, multiword ranges and empty nodes of one sentence, held until it ends: treebanks' longest
// sentences have a few hundred; a file with no blank line would otherwise be held whole.
constexpr std::size_t kMaxSentenceLines = 100000;
// Sentences whose `# text` comment differs from their text that the warning names by line.
constexpr std::size_t kNamedMismatches = 3;
// Bytes of each text the warning quotes, from the start of the word where they differ.
constexpr std::size_t kExcerptBytes = 30;

// The ten columns of a word line, https://universaldependencies.org/format.html.
enum Column : std::size_t { kId, kForm, kLemma, kUpos, kXpos, kFeats, kHead, kDeprel, kDeps, kMisc, kColumns };
using Fields = std::array<std::string_view, kColumns>;

// Splits `line` at TABs into `fields` (the first kColumns of them); returns how many there are.
std::size_t split_fields(std::string_view line, Fields& fields) {
  std::size_t count = 0;
  std::size_t start = 0;
  while (true) {
    const std::size_t tab = line.find('\t', start);
    if (count < kColumns) fields[count] = line.substr(start, tab == std::string_view::npos ? tab : tab - start);
    ++count;
    if (tab == std::string_view::npos) return count;
    start = tab + 1;
  }
}

// A decimal integer filling all of `text` ("-3" included); nullopt otherwise.
std::optional<long long> parse_integer(std::string_view text) {
  long long value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end) return std::nullopt;
  return value;
}

struct Id {
  enum Kind { kWord, kRange, kEmptyNode } kind = kWord;
  long long first = 0;  // the word ID; the range's first word; the empty node's preceding word
  long long last = 0;   // the range's last word
};

// "3" (word), "3-4" (multiword token), "5.1" (empty node); nullopt for anything else.
std::optional<Id> parse_id(std::string_view text) {
  for (const auto& [separator, kind] : {std::pair{'-', Id::kRange}, std::pair{'.', Id::kEmptyNode}}) {
    const std::size_t at = text.find(separator);
    if (at == std::string_view::npos) continue;
    const std::optional<long long> first = parse_integer(text.substr(0, at));
    const std::optional<long long> second = parse_integer(text.substr(at + 1));
    if (!first || !second) return std::nullopt;
    if (kind == Id::kRange && (*first < 1 || *second <= *first)) return std::nullopt;
    if (kind == Id::kEmptyNode && (*first < 0 || *second < 1)) return std::nullopt;
    return Id{kind, *first, *second};
  }
  const std::optional<long long> word = parse_integer(text);
  if (!word || *word < 1) return std::nullopt;
  return Id{Id::kWord, *word, *word};
}

bool has_space_after_no(std::string_view misc) {
  while (true) {
    const std::size_t bar = misc.find('|');
    if (misc.substr(0, bar) == "SpaceAfter=No") return true;
    if (bar == std::string_view::npos) return false;
    misc.remove_prefix(bar + 1);
  }
}

bool is_blank(std::string_view line) { return line.find_first_not_of(" \t") == std::string_view::npos; }

// The value of a comment `# KEY = VALUE` (spaces around `=` optional, trailing whitespace not part
// of it); nullopt for another comment.
std::optional<std::string_view> comment_value(std::string_view line, std::string_view key) {
  const auto skip_spaces = [&line] { line.remove_prefix(std::min(line.size(), line.find_first_not_of(" \t"))); };
  line.remove_prefix(1);  // '#'
  skip_spaces();
  if (line.substr(0, key.size()) != key) return std::nullopt;
  line.remove_prefix(key.size());
  skip_spaces();
  if (line.empty() || line.front() != '=') return std::nullopt;
  line.remove_prefix(1);
  skip_spaces();
  return line.substr(0, line.find_last_not_of(" \t") + 1);
}

// Up to kExcerptBytes of `text` from `start`, not cutting a character, with "…" where it is cut.
std::string excerpt(std::string_view text, std::size_t start) {
  std::size_t end = std::min(text.size(), start + kExcerptBytes);
  while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // a UTF-8 continuation
  return fmt::format("{}{}{}", start > 0 ? "…" : "", text.substr(start, end - start), end < text.size() ? "…" : "");
}

struct WordLine {
  std::string form;
  std::optional<long long> head;  // nullopt: HEAD `_`
  std::string relation;           // DEPREL without its subtype; empty for `_`
  bool space_after = true;
  std::size_t line_number = 0;
};

struct RangeLine {
  Id id;
  std::string text;             // the ID as written, for messages
  std::string form;             // the token as the text has it ("don't")
  std::size_t words_before = 0;  // integer-ID words read before the range line
  bool space_after = true;
  std::size_t line_number = 0;
};

// Collects the lines of one sentence, then checks it as a whole and builds its text and arcs.
class SentenceParser {
 public:
  explicit SentenceParser(const std::string& path) : path_(path) {}

  bool has_words() const { return !words_.empty(); }

  // Takes one non-blank, non-comment line.
  void add_line(std::string_view line, std::size_t line_number);
  // Takes one comment line; keeps its `# text` and `# sent_id`.
  void add_comment(std::string_view line);

  // Checks ranges, HEADs and cycles; fills `sentence` (all but line_number).
  void finish(ConlluSentence& sentence);

  const std::optional<std::string>& text_comment() const { return text_comment_; }
  const std::string& sent_id() const { return sent_id_; }

 private:
  [[noreturn]] void fail(std::size_t line_number, const std::string& message) const {
    throw InputError(fmt::format("{}:{}: {}", path_, line_number, message));
  }
  void check_acyclic() const;

  const std::string& path_;
  std::vector<WordLine> words_;
  std::vector<RangeLine> ranges_;
  std::optional<std::string> text_comment_;  // the first `# text`
  std::string sent_id_;                      // the first `# sent_id`
};

void SentenceParser::add_comment(std::string_view line) {
  if (!text_comment_) {
    if (const std::optional<std::string_view> text = comment_value(line, "text")) text_comment_ = std::string(*text);
  }
  if (sent_id_.empty()) {
    if (const std::optional<std::string_view> id = comment_value(line, "sent_id")) sent_id_ = *id;
  }
}

void SentenceParser::add_line(std::string_view line, std::size_t line_number) {
  Fields fields;
  const std::size_t count = split_fields(line, fields);
  if (count != kColumns) {
    fail(line_number, fmt::format("expected {} tab-separated fields (CoNLL-U), found {}; check the line is "
                                  "tab-separated",
                                  static_cast<std::size_t>(kColumns), count));
  }
  const std::optional<Id> id = parse_id(fields[kId]);
  if (!id) {
    fail(line_number, fmt::format("expected an ID: a word number (1, 2, ...), a multiword range (3-4) or an "
                                  "empty node (5.1), found `{}`; fix the ID column",
                                  fields[kId]));
  }
  if (id->kind == Id::kEmptyNode) return;  // enhanced-graph nodes carry no basic arc
  if (id->kind == Id::kRange) {
    if (fields[kForm].empty()) {
      fail(line_number, fmt::format("expected a FORM for multiword token {}, found an empty field; write the token as "
                                    "the text has it",
                                    fields[kId]));
    }
    ranges_.push_back({*id, std::string(fields[kId]), std::string(fields[kForm]), words_.size(),
                       !has_space_after_no(fields[kMisc]), line_number});
    return;
  }

  const long long expected_id = static_cast<long long>(words_.size()) + 1;
  if (id->first != expected_id) {
    fail(line_number, fmt::format("expected word ID {} (IDs count 1, 2, 3, ... in each sentence), found {}; "
                                  "number the words in order and end each sentence with a blank line",
                                  expected_id, id->first));
  }
  if (fields[kForm].empty()) {
    fail(line_number, fmt::format("expected a FORM for word {}, found an empty field; write the word (or _)",
                                  id->first));
  }
  WordLine word;
  word.form = fields[kForm];
  if (fields[kHead] != "_") {
    word.head = parse_integer(fields[kHead]);
    if (!word.head) {
      fail(line_number, fmt::format("expected HEAD to be a word ID (0 for the root) or _, found `{}`; fix the "
                                    "HEAD column of word {}",
                                    fields[kHead], id->first));
    }
  }
  const std::string_view relation = fields[kDeprel].substr(0, fields[kDeprel].find(':'));  // obl:tmod → obl
  if (relation != "_") word.relation = relation;
  word.space_after = !has_space_after_no(fields[kMisc]);
  word.line_number = line_number;
  words_.push_back(std::move(word));
}

void SentenceParser::finish(ConlluSentence& sentence) {
  const long long word_count = static_cast<long long>(words_.size());
  const RangeLine* previous = nullptr;
  for (const RangeLine& range : ranges_) {
    const long long expected_first = static_cast<long long>(range.words_before) + 1;
    if (range.id.first != expected_first) {
      fail(range.line_number, fmt::format("expected a multiword range starting at word {}, found {}; put the "
                                          "range line just before its first word",
                                          expected_first, range.text));
    }
    if (previous != nullptr && range.id.first <= previous->id.last) {
      fail(range.line_number, fmt::format("expected a multiword range after the words of range {}, found {}; a word "
                                          "belongs to one multiword token at most",
                                          previous->text, range.text));
    }
    if (range.id.last > word_count) {
      fail(range.line_number, fmt::format("expected the words of range {}, found the sentence ends at word {}; "
                                          "add the range's words after it",
                                          range.text, word_count));
    }
    previous = &range;
  }
  for (std::size_t i = 0; i < words_.size(); ++i) {
    const std::optional<long long>& head = words_[i].head;
    if (head && (*head < 0 || *head > word_count)) {
      fail(words_[i].line_number, fmt::format("expected HEAD of word {} between 0 (root) and {} (the words of the "
                                              "sentence), found {}; fix the HEAD column",
                                              i + 1, word_count, *head));
    }
  }
  check_acyclic();

  // The text as the treebank wrote it: a multiword token's FORM (and its SpaceAfter=No) stands for
  // its words, which all get its span.
  sentence.text.clear();
  sentence.parse.words.clear();
  sentence.parse.words.reserve(words_.size());
  const auto add_word = [&](std::size_t index, std::size_t begin, bool continues_multiword) {
    const WordLine& word = words_[index];
    ParsedWord parsed;
    parsed.begin = begin;
    parsed.end = sentence.text.size();
    parsed.continues_multiword = continues_multiword;
    if (word.head && *word.head != 0 && !word.relation.empty()) {
      parsed.head = static_cast<int>(*word.head - 1);
      parsed.relation = word.relation;
    }
    sentence.parse.words.push_back(std::move(parsed));
  };
  auto range = ranges_.begin();
  for (std::size_t index = 0; index < words_.size();) {
    const std::size_t begin = sentence.text.size();
    bool space_after = true;
    if (range != ranges_.end() && static_cast<std::size_t>(range->id.first) == index + 1) {
      sentence.text += range->form;
      for (std::size_t word = index; word < static_cast<std::size_t>(range->id.last); ++word) {
        add_word(word, begin, /*continues_multiword=*/word > index);
      }
      index = static_cast<std::size_t>(range->id.last);
      space_after = range->space_after;
      ++range;
    } else {
      sentence.text += words_[index].form;
      add_word(index, begin, /*continues_multiword=*/false);
      space_after = words_[index].space_after;
      ++index;
    }
    if (space_after && index < words_.size()) sentence.text += ' ';
  }
}

void SentenceParser::check_acyclic() const {
  // Each word has at most one head, so walking up from every word finds every cycle.
  enum State : unsigned char { kUnvisited, kOnPath, kDone };
  std::vector<State> state(words_.size(), kUnvisited);
  std::vector<std::size_t> path;
  const auto head_of = [&](std::size_t word) -> std::optional<std::size_t> {
    const std::optional<long long>& head = words_[word].head;
    if (!head || *head == 0) return std::nullopt;
    return static_cast<std::size_t>(*head - 1);
  };
  for (std::size_t start = 0; start < words_.size(); ++start) {
    path.clear();
    std::optional<std::size_t> word = start;
    while (word && state[*word] == kUnvisited) {
      state[*word] = kOnPath;
      path.push_back(*word);
      word = head_of(*word);
    }
    if (word && state[*word] == kOnPath) {
      std::vector<std::size_t> cycle(std::find(path.begin(), path.end(), *word), path.end());
      std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
      std::string chain;
      for (const std::size_t member : cycle) chain += std::to_string(member + 1) + " -> ";
      chain += std::to_string(cycle.front() + 1);
      fail(words_[cycle.front()].line_number,
           fmt::format("expected HEADs to form a tree, found a cycle {} (word {} is its own ancestor); fix the HEAD "
                       "of one of these words",
                       chain, cycle.front() + 1));
    }
    for (const std::size_t visited : path) state[visited] = kDone;
  }
}

}  // namespace

ConlluReader::ConlluReader(const std::string& path, CorpusSlice slice)
    : lines_(path, kExpected, ".conllu file", slice, SliceUnits::blocks) {}

bool ConlluReader::next(ConlluSentence& sentence) {
  std::string line;
  while (true) {
    SentenceParser parser(lines_.where());
    std::size_t first_line = 0;  // 0: the sentence has not started
    std::size_t word_lines = 0;
    while (lines_.next(line)) {
      if (is_blank(line)) {
        if (first_line != 0) break;
        continue;
      }
      if (first_line == 0) {
        first_line = lines_.line_number();
        sentence.chunk = lines_.chunk();
      }
      if (line.front() == '#') {
        parser.add_comment(line);
        continue;
      }
      if (++word_lines > kMaxSentenceLines) {
        throw InputError(fmt::format("{}:{}: {}, found a sentence of more than {} word lines (it starts on line {}); "
                                     "a sentence ends at a blank line: check the file",
                                     lines_.where(), lines_.line_number(), kExpected, kMaxSentenceLines, first_line));
      }
      parser.add_line(line, lines_.line_number());
    }
    if (first_line == 0) return false;
    if (!parser.has_words()) continue;  // comments, ranges or empty nodes only
    parser.finish(sentence);
    sentence.line_number = first_line;
    ++sentences_read_;
    if (parser.text_comment() && *parser.text_comment() != sentence.text) {
      note_text_mismatch(sentence, *parser.text_comment(), parser.sent_id());
    }
    return true;
  }
}

void ConlluReader::note_text_mismatch(const ConlluSentence& sentence, const std::string& comment,
                                      const std::string& sent_id) {
  if (text_mismatches_++ == 0) {
    // Quoted from the start of the word where the two first differ.
    const auto differ = std::mismatch(sentence.text.begin(), sentence.text.end(), comment.begin(), comment.end());
    const auto at = static_cast<std::size_t>(differ.first - sentence.text.begin());
    const std::size_t space = at == 0 ? std::string::npos : sentence.text.rfind(' ', at - 1);
    const std::size_t start = space == std::string::npos ? 0 : space + 1;
    first_mismatch_ = fmt::format("the words read \"{}\" where `# text` has \"{}\"", excerpt(sentence.text, start),
                                  excerpt(comment, start));
  }
  if (mismatched_sentences_.size() < kNamedMismatches) {
    mismatched_sentences_.push_back(sent_id.empty() ? fmt::format("line {}", sentence.line_number)
                                                    : fmt::format("line {} (sent_id {})", sentence.line_number, sent_id));
  }
}

std::string ConlluReader::text_warning() const {
  if (text_mismatches_ == 0) return {};
  std::string named = mismatched_sentences_.front() + ": " + first_mismatch_;
  for (std::size_t i = 1; i < mismatched_sentences_.size(); ++i) named += "; " + mismatched_sentences_[i];
  if (text_mismatches_ > mismatched_sentences_.size()) {
    named += fmt::format("; and {} more", text_mismatches_ - mismatched_sentences_.size());
  }
  return fmt::format("{}: {} sentence(s) whose words do not spell their `# text` comment, and the model reads the "
                     "words' text: {}; check their FORMs, multiword tokens and SpaceAfter=No",
                     lines_.where(), text_mismatches_, named);
}

}  // namespace headscan
