#include "analyzer/corpus/link_grammar_parser.h"

#include <link-grammar/link-includes.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include "analyzer/errors.h"
#include "analyzer/resources.h"

namespace headscan {
namespace {

// Longer sentences are not tried: link-grammar's parse time grows steeply with length, and such
// sentences rarely get a complete linkage. With no time limit (below), this cap is what bounds
// the time of one sentence (README, "Syntactic heads", has the measured worst case).
constexpr std::size_t kMaxSentenceWords = 60;
constexpr int kLinkageLimit = 100;  // linkages looked at per sentence; linkage 0 is the best-cost one

struct LinkTypeRow {
  std::string_view type;
  std::string_view relation;
  bool head_is_left;
};

// DESIGN.md, "Syntactic heads": S→nsubj (verb), O→obj (verb), A→amod (noun), D→det (noun),
// AN→compound (noun), E→advmod (verb), J→pobj (preposition), MV→obl (verb). The three subject
// types beside S are subjects too (link-grammar dictionary 4.0.dict): SX links "I" to its verb
// (verb on the right), SI and SXI link an inverted subject to the verb before it ("Is the cat…",
// "Am I…"), so their head is on the left.
constexpr std::array<LinkTypeRow, 11> kLinkTypes = {{
    {"S", "nsubj", false},
    {"SX", "nsubj", false},
    {"SI", "nsubj", true},
    {"SXI", "nsubj", true},
    {"O", "obj", true},
    {"A", "amod", false},
    {"D", "det", false},
    {"AN", "compound", false},
    {"E", "advmod", false},
    {"J", "pobj", true},
    {"MV", "obl", true},
}};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

bool is_ascii_punctuation(char c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
}

// Length of the closing quote or bracket at `pos` (ASCII, or UTF-8 ” ’ »), 0 if there is none.
std::size_t closer_length(std::string_view text, std::size_t pos) {
  static constexpr std::array<std::string_view, 8> kClosers = {"\"", "'", ")", "]", "}", "\u201D", "\u2019",
                                                               "\u00BB"};
  for (const std::string_view closer : kClosers) {
    if (text.substr(pos, closer.size()) == closer) return closer.size();
  }
  return 0;
}

std::size_t skip_space(std::string_view text, std::size_t pos) {
  while (pos < text.size() && is_space(text[pos])) ++pos;
  return pos;
}

// Words of text[begin, end) for a sentence link-grammar did not parse, spans relative to `text`:
// split at whitespace, then each leading and trailing ASCII punctuation character is a word of its
// own (`"Hello,` → `"` `Hello` `,`), roughly as link-grammar itself would tokenize.
void append_fallback_words(std::string_view text, std::size_t begin, std::size_t end,
                           std::vector<ParsedWord>& words) {
  std::size_t pos = begin;
  while (pos < end) {
    while (pos < end && is_space(text[pos])) ++pos;
    std::size_t chunk_end = pos;
    while (chunk_end < end && !is_space(text[chunk_end])) ++chunk_end;
    std::size_t core_begin = pos;
    std::size_t core_end = chunk_end;
    while (core_begin < core_end && is_ascii_punctuation(text[core_begin])) {
      words.push_back({core_begin, core_begin + 1, -1, ""});
      ++core_begin;
    }
    while (core_end > core_begin && is_ascii_punctuation(text[core_end - 1])) --core_end;
    if (core_begin < core_end) words.push_back({core_begin, core_end, -1, ""});
    for (std::size_t p = core_end; p < chunk_end; ++p) words.push_back({p, p + 1, -1, ""});
    pos = chunk_end;
  }
}

// Collects link-grammar's error and fatal messages instead of printing them (it prints debug and
// locale notes to stderr otherwise). link-grammar's error handler is per thread, so the capture is
// installed around each call into the library and the previous handler restored afterwards.
class DiagnosticCapture {
 public:
  DiagnosticCapture()
      : previous_data_(lg_error_set_handler_data(nullptr)), previous_handler_(lg_error_set_handler(&collect, this)) {}
  ~DiagnosticCapture() {
    lg_error_set_handler(previous_handler_, const_cast<void*>(previous_data_));  // the API takes void*
  }
  DiagnosticCapture(const DiagnosticCapture&) = delete;
  DiagnosticCapture& operator=(const DiagnosticCapture&) = delete;

  // The errors seen, joined by "; ", without link-grammar's trailing newlines.
  const std::string& errors() const { return errors_; }

 private:
  static void collect(lg_errinfo* message, void* data) {
    if (message->severity > lg_Error || message->text == nullptr) return;
    std::string text = message->text;
    while (!text.empty() && is_space(text.back())) text.pop_back();
    auto* self = static_cast<DiagnosticCapture*>(data);
    if (!self->errors_.empty()) self->errors_ += "; ";
    self->errors_ += text;
  }

  const void* previous_data_;
  lg_error_handler previous_handler_;
  std::string errors_;
};

struct SentenceDeleter {
  void operator()(Sentence_s* sentence) const { sentence_delete(sentence); }
};
struct LinkageDeleter {
  void operator()(Linkage_s* linkage) const { linkage_delete(linkage); }
};
using SentencePtr = std::unique_ptr<Sentence_s, SentenceDeleter>;
using LinkagePtr = std::unique_ptr<Linkage_s, LinkageDeleter>;

}  // namespace

std::optional<LinkRelation> relation_for_link(std::string_view label) {
  std::size_t type_length = 0;
  while (type_length < label.size() && label[type_length] >= 'A' && label[type_length] <= 'Z') ++type_length;
  const std::string_view type = label.substr(0, type_length);
  for (const LinkTypeRow& row : kLinkTypes) {
    if (row.type == type) return LinkRelation{std::string(row.relation), row.head_is_left};
  }
  return std::nullopt;
}

std::vector<std::pair<std::size_t, std::size_t>> split_sentences(std::string_view line) {
  std::vector<std::pair<std::size_t, std::size_t>> sentences;
  std::size_t end_of_text = line.size();
  while (end_of_text > 0 && is_space(line[end_of_text - 1])) --end_of_text;
  const std::string_view text = line.substr(0, end_of_text);

  std::size_t start = skip_space(text, 0);
  std::size_t pos = start;
  while (pos < text.size()) {
    const char c = text[pos++];
    if (c != '.' && c != '!' && c != '?') continue;
    for (std::size_t length = closer_length(text, pos); length > 0; length = closer_length(text, pos)) pos += length;
    // A run like "?!" or "..." ends at its last mark, the one followed by whitespace.
    if (pos < text.size() && !is_space(text[pos])) continue;
    sentences.emplace_back(start, pos);
    start = pos = skip_space(text, pos);
  }
  if (start < text.size()) sentences.emplace_back(start, text.size());
  return sentences;
}

namespace {

struct DictionaryDeleter {
  void operator()(Dictionary_s* dictionary) const {
    const DiagnosticCapture capture;
    dictionary_delete(dictionary);
  }
};

// The options of every parser (LinkGrammarParser's contract).
Parse_Options make_parse_options() {
  Parse_Options options = parse_options_create();
  if (options == nullptr) throw std::runtime_error("link-grammar: parse_options_create failed");
  parse_options_set_verbosity(options, 0);
  // Complete linkages only: a linkage with null links leaves words out of the tree.
  parse_options_set_min_null_count(options, 0);
  parse_options_set_max_null_count(options, 0);
  parse_options_set_linkage_limit(options, kLinkageLimit);
  // No time limit: link-grammar's timer measures the CPU time of the whole process
  // (getrusage(RUSAGE_SELF)), the model's threads included, so with one a sentence would parse or
  // not depending on the load, and heads.json would not be deterministic. -1 is unlimited.
  parse_options_set_max_parse_time(options, -1);
  // Same input, same linkages (when there are more than kLinkageLimit, link-grammar samples them).
  parse_options_set_repeatable_rand(options, true);
  // With spell guessing, unknown words are replaced by English look-alikes, and German sentences
  // ("Der Hund läuft schnell.") get English parses.
  parse_options_set_spell_guess(options, 0);
  return options;
}

}  // namespace

struct LinkGrammarParser::Impl {
  std::shared_ptr<Dictionary_s> dictionary;  // shared by the parsers of sharing_dictionary()
  Parse_Options options = nullptr;

  ~Impl() {
    const DiagnosticCapture capture;
    if (options != nullptr) parse_options_delete(options);
  }

  // Words of line[begin, end) (spans relative to the line) with arcs (heads index these words);
  // nullopt when the sentence has no complete linkage.
  std::optional<std::vector<ParsedWord>> parse_sentence(std::string_view line, std::size_t begin, std::size_t end);
};

LinkGrammarParser::LinkGrammarParser() : impl_(std::make_unique<Impl>()) {
  const DiagnosticCapture capture;
  // The wheel's copy of the dictionaries (resources.h), else link-grammar's own search.
  static const std::filesystem::path bundled = installed_file("share/headscan/link-grammar");
  if (!bundled.empty()) dictionary_set_data_dir(bundled.c_str());
  Dictionary dictionary = dictionary_create_lang("en");
  if (dictionary == nullptr) {
    const std::string found = capture.errors().empty() ? "no message from link-grammar" : capture.errors();
    throw InputError("cannot load link-grammar's English dictionary (" + found +
                     "): install link-grammar-dictionaries-en, or use --parser none");
  }
  impl_->dictionary = std::shared_ptr<Dictionary_s>(dictionary, DictionaryDeleter{});
  impl_->options = make_parse_options();
}

LinkGrammarParser::LinkGrammarParser(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

LinkGrammarParser LinkGrammarParser::sharing_dictionary() const {
  auto impl = std::make_unique<Impl>();
  impl->dictionary = impl_->dictionary;
  impl->options = make_parse_options();
  return LinkGrammarParser(std::move(impl));
}

LinkGrammarParser::~LinkGrammarParser() = default;
LinkGrammarParser::LinkGrammarParser(LinkGrammarParser&&) noexcept = default;
LinkGrammarParser& LinkGrammarParser::operator=(LinkGrammarParser&&) noexcept = default;

std::optional<std::vector<ParsedWord>> LinkGrammarParser::Impl::parse_sentence(std::string_view line,
                                                                               std::size_t begin, std::size_t end) {
  const std::string text(line.substr(begin, end - begin));
  const SentencePtr sentence(sentence_create(text.c_str(), dictionary.get()));
  if (sentence == nullptr || sentence_split(sentence.get(), options) < 0) return std::nullopt;
  const int linkages = sentence_parse(sentence.get(), options);
  // Linkages are sorted by post-processing violations, then cost: linkage 0 is the best valid one
  // when there is any valid one.
  if (linkages <= 0 || sentence_num_valid_linkages(sentence.get()) <= 0) return std::nullopt;
  const LinkagePtr linkage(linkage_create(0, sentence.get(), options));
  if (linkage == nullptr) return std::nullopt;

  // linkage word index → index in `words`; -1 for LEFT-WALL, RIGHT-WALL and any other empty span.
  std::vector<ParsedWord> words;
  const std::size_t word_count = linkage_get_num_words(linkage.get());
  // A word the dictionary does not know gets a guessed part of speech ("w3[?].n"); with such
  // guesses link-grammar "parses" word lists and foreign text, so the sentence counts as unparsed.
  // Words matched by the dictionary's regexes (names, numbers: "Lily[!<CAPITALIZED-WORDS>]") stay.
  for (std::size_t w = 0; w < word_count; ++w) {
    const char* word = linkage_get_word(linkage.get(), w);
    if (word != nullptr && std::strstr(word, "[?]") != nullptr) return std::nullopt;
  }
  std::vector<int> word_index(word_count, -1);
  for (std::size_t w = 0; w < word_count; ++w) {
    const std::size_t word_begin = begin + linkage_get_word_byte_start(linkage.get(), w);
    const std::size_t word_end = begin + linkage_get_word_byte_end(linkage.get(), w);
    if (word_begin >= word_end || word_end > end) continue;
    if (!words.empty() && word_begin < words.back().end) return std::nullopt;  // ParsedSentence: no overlap
    word_index[w] = static_cast<int>(words.size());
    words.push_back({word_begin, word_end, -1, ""});
  }

  const std::size_t link_count = linkage_get_num_links(linkage.get());
  for (std::size_t link = 0; link < link_count; ++link) {
    const std::optional<LinkRelation> relation = relation_for_link(linkage_get_link_label(linkage.get(), link));
    if (!relation) continue;
    const int left = word_index[linkage_get_link_lword(linkage.get(), link)];
    const int right = word_index[linkage_get_link_rword(linkage.get(), link)];
    if (left < 0 || right < 0) continue;
    const int head = relation->head_is_left ? left : right;
    ParsedWord& dependent = words[static_cast<std::size_t>(relation->head_is_left ? right : left)];
    // A dependency tree has one head per word: when two mapped links make the same word a
    // dependent, the first in linkage order wins and the other gives no arc.
    if (dependent.head >= 0) continue;
    dependent.head = head;
    dependent.relation = relation->relation;
  }
  return words;
}

LineParse LinkGrammarParser::parse_line(std::string_view line) {
  const DiagnosticCapture capture;  // parse-time messages are dropped; an unparsed sentence is counted
  LineParse result;
  std::vector<ParsedWord>& words = result.parse.words;
  for (const auto& [begin, end] : split_sentences(line)) {
    ++result.sentences;
    const std::size_t first_word = words.size();
    append_fallback_words(line, begin, end, words);
    if (words.size() - first_word > kMaxSentenceWords) continue;
    std::optional<std::vector<ParsedWord>> parsed_words = impl_->parse_sentence(line, begin, end);
    if (!parsed_words) continue;
    words.resize(first_word);  // link-grammar's words replace the fallback ones
    for (ParsedWord& word : *parsed_words) {
      if (word.head >= 0) word.head += static_cast<int>(first_word);  // sentence → line index
      words.push_back(std::move(word));
    }
    ++result.parsed;
  }
  return result;
}

}  // namespace headscan
