// link-grammar parser: link-type table, sentence splitting, and parses of small English lines
// with exact word spans and arcs (DESIGN.md, "Syntactic heads"); the parsers on threads of their
// own (ParsePool) and the reader that hands documents out before their parses are done.

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "analyzer/corpus/documents.h"
#include "analyzer/corpus/link_grammar_parser.h"
#include "analyzer/corpus/parse_pool.h"
#include "tests/fixtures.h"

namespace headscan {
namespace {

using Spans = std::vector<std::pair<std::size_t, std::size_t>>;

// One entry per word: "text begin-end", then " relation->head" when it has an arc.
std::vector<std::string> describe(std::string_view line, const ParsedSentence& parse) {
  std::vector<std::string> described;
  for (const ParsedWord& word : parse.words) {
    std::string entry = std::string(line.substr(word.begin, word.end - word.begin)) + " " +
                        std::to_string(word.begin) + "-" + std::to_string(word.end);
    if (word.head >= 0) entry += " " + word.relation + "->" + std::to_string(word.head);
    described.push_back(entry);
  }
  return described;
}

// Loading the dictionary takes a while; the test cases share one parser.
LinkGrammarParser& parser() {
  static LinkGrammarParser shared;
  return shared;
}

void check_relation(std::string_view label, const std::string& relation, bool head_is_left) {
  INFO("label " << label);
  const std::optional<LinkRelation> found = relation_for_link(label);
  REQUIRE(found.has_value());
  CHECK(found->relation == relation);
  CHECK(found->head_is_left == head_is_left);
}

}  // namespace

TEST_CASE("[link-grammar] link types map to DESIGN.md's relations", "[link-grammar]") {
  check_relation("Ss*s", "nsubj", false);
  check_relation("Sp*i", "nsubj", false);
  check_relation("Os", "obj", true);
  check_relation("A", "amod", false);
  check_relation("Ds**x", "det", false);
  check_relation("AN", "compound", false);
  check_relation("Em", "advmod", false);
  check_relation("Js", "pobj", true);
  check_relation("MVp", "obl", true);
  SECTION("other subject types: SX has the verb on the right, SI and SXI on the left") {
    check_relation("SX", "nsubj", false);
    check_relation("SIs*x", "nsubj", true);
    check_relation("SXI", "nsubj", true);
  }
  SECTION("the type must match exactly; other links give no arc") {
    for (const std::string_view label : {"DD", "Xp", "Wd", "EA", "RW", "PHc", "AA", "OF", "MX", "Mp", "JT", "SJls",
                                         "dWi", "", "s"}) {
      INFO("label " << label);
      CHECK_FALSE(relation_for_link(label).has_value());
    }
  }
}

TEST_CASE("[link-grammar] split_sentences", "[link-grammar]") {
  SECTION("a paragraph: endings with closing quotes and brackets, runs of marks") {
    const std::string line = "  He said \"Stop.\" She left (quickly.) \"Why?!\" he asked...  ";
    CHECK(split_sentences(line) == Spans{{2, 17}, {18, 37}, {38, 45}, {46, 57}});
  }
  SECTION("no terminal punctuation: one sentence; a dot inside a number ends nothing") {
    CHECK(split_sentences("  no ending here, 3.5 apples  ") == Spans{{2, 28}});
  }
  SECTION("abbreviations split (not recognised)") {
    CHECK(split_sentences("Mr. Smith left.") == Spans{{0, 3}, {4, 15}});
  }
  SECTION("blank lines have no sentence") {
    CHECK(split_sentences("").empty());
    CHECK(split_sentences(" \t \r").empty());
  }
}

TEST_CASE("[link-grammar] parse_line gives link-grammar's arcs with exact spans", "[link-grammar]") {
  SECTION("one sentence") {
    const std::string line = "the big red dog quickly chased a small cat.";
    const LineParse result = parser().parse_line(line);
    CHECK(result.sentences == 1);
    CHECK(result.parsed == 1);
    CHECK(describe(line, result.parse) == std::vector<std::string>{
                                              "the 0-3 det->3",
                                              "big 4-7 amod->3",
                                              "red 8-11 amod->3",
                                              "dog 12-15 nsubj->5",
                                              "quickly 16-23 advmod->5",
                                              "chased 24-30",
                                              "a 31-32 det->8",
                                              "small 33-38 amod->8",
                                              "cat 39-42 obj->5",
                                              ". 42-43",
                                          });
  }
  SECTION("two sentences: spans relative to the line, heads index the line's words") {
    const std::string line = "  The cat sat. It slept on the mat.  ";
    const LineParse result = parser().parse_line(line);
    CHECK(result.sentences == 2);
    CHECK(result.parsed == 2);
    CHECK(describe(line, result.parse) == std::vector<std::string>{
                                              "The 2-5 det->1",
                                              "cat 6-9 nsubj->2",
                                              "sat 10-13",
                                              ". 13-14",
                                              "It 15-17 nsubj->5",
                                              "slept 18-23",
                                              "on 24-26 obl->5",
                                              "the 27-30 det->8",
                                              "mat 31-34 pobj->6",
                                              ". 34-35",
                                          });
  }
  SECTION("an inverted subject (SI) has its verb on the left") {
    const std::string line = "Is the cat on the mat?";
    CHECK(describe(line, parser().parse_line(line).parse) ==
          std::vector<std::string>{"Is 0-2", "the 3-6 det->2", "cat 7-10 nsubj->0", "on 11-13", "the 14-17 det->5",
                                   "mat 18-21 pobj->3", "? 21-22"});
  }
  SECTION("one head per word: the first mapped link wins") {
    // Links in linkage order: Sp dogs-ran, Dmc many-dogs, OFd, Jd of-dogs (dropped), Dmc the-dogs.
    const std::string line = "Many of the dogs ran.";
    CHECK(describe(line, parser().parse_line(line).parse) ==
          std::vector<std::string>{"Many 0-4 det->3", "of 5-7", "the 8-11 det->3", "dogs 12-16 nsubj->4", "ran 17-20",
                                   ". 20-21"});
  }
}

TEST_CASE("[link-grammar] sentences without a complete linkage give words but no arcs", "[link-grammar]") {
  SECTION("German (no spell guessing into English)") {
    const std::string line = "Der Hund läuft schnell.";
    const LineParse result = parser().parse_line(line);
    CHECK(result.sentences == 1);
    CHECK(result.parsed == 0);
    CHECK(describe(line, result.parse) ==
          std::vector<std::string>{"Der 0-3", "Hund 4-8", "läuft 9-15", "schnell 16-23", ". 23-24"});
  }
  SECTION("word salad: leading and trailing punctuation are words of their own") {
    const std::string line = "of the the \"cat, dog\".";
    const LineParse result = parser().parse_line(line);
    CHECK(result.sentences == 1);
    CHECK(result.parsed == 0);
    CHECK(describe(line, result.parse) == std::vector<std::string>{"of 0-2", "the 3-6", "the 7-10", "\" 11-12",
                                                                   "cat 12-15", ", 15-16", "dog 17-20", "\" 20-21",
                                                                   ". 21-22"});
  }
  SECTION("unknown words: a word list is not parsed by guessing their parts of speech") {
    const LineParse result = parser().parse_line("w3 w4 w5 w6 w7");
    CHECK(result.sentences == 1);
    CHECK(result.parsed == 0);
    CHECK(result.parse.words.size() == 5);
  }
  SECTION("a name matched by the dictionary's patterns still parses") {
    const std::string line = "Lily saw a big dog.";
    const LineParse result = parser().parse_line(line);
    CHECK(result.parsed == 1);
    CHECK(describe(line, result.parse) == std::vector<std::string>{"Lily 0-4 nsubj->1", "saw 5-8", "a 9-10 det->4",
                                                                   "big 11-14 amod->4", "dog 15-18 obj->1",
                                                                   ". 18-19"});
  }
  SECTION("an unparsed sentence before a parsed one shifts its heads") {
    const std::string line = "Der Hund läuft schnell. The cat sat.";
    const LineParse result = parser().parse_line(line);
    CHECK(result.sentences == 2);
    CHECK(result.parsed == 1);
    CHECK(describe(line, result.parse) ==
          std::vector<std::string>{"Der 0-3", "Hund 4-8", "läuft 9-15", "schnell 16-23", ". 23-24", "The 25-28 det->6",
                                   "cat 29-32 nsubj->7", "sat 33-36", ". 36-37"});
  }
  SECTION("sentences over 60 words are not tried") {
    std::string sixty_words;  // 15 × "the dog ran" joined by "and", then ".": 60 words, parses
    for (int clause = 0; clause < 15; ++clause) sixty_words += clause == 0 ? "the dog ran" : " and the dog ran";
    const LineParse sixty = parser().parse_line(sixty_words + ".");
    CHECK(sixty.parsed == 1);
    CHECK(sixty.parse.words.size() == 60);
    const LineParse sixty_one = parser().parse_line(sixty_words + " fast.");  // link-grammar parses it
    CHECK(sixty_one.sentences == 1);
    CHECK(sixty_one.parsed == 0);
    CHECK(sixty_one.parse.words.size() == 61);
    for (const ParsedWord& word : sixty_one.parse.words) CHECK(word.head == -1);
  }
  SECTION("empty and whitespace-only lines") {
    for (const std::string_view line : {"", "   ", "\t\r\n"}) {
      const LineParse result = parser().parse_line(line);
      CHECK(result.sentences == 0);
      CHECK(result.parsed == 0);
      CHECK(result.parse.words.empty());
    }
  }
}

TEST_CASE("[link-grammar] what parses does not depend on the load of the process", "[link-grammar][load]") {
  // link-grammar's timer counts the CPU time of the whole process (getrusage(RUSAGE_SELF)), so a
  // time limit would run out sooner while other threads compute: headscan's model runs beside
  // the parser. 59 × "police" has complete linkages and takes about 0.5 s of one core to parse
  // the first time (less once link-grammar has seen it, so the loaded parse comes first); with 20
  // other threads spinning, the process spends about 10 s of CPU meanwhile, and a limit of 5 s
  // would run out.
  std::string line;
  for (int word = 0; word < 59; ++word) line += "police ";
  line += ".";

  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (int thread = 0; thread < 20; ++thread) {
    busy.emplace_back([&stop] {
      volatile unsigned long spins = 0;
      while (!stop.load(std::memory_order_relaxed)) spins = spins + 1;
    });
  }
  const LineParse loaded = parser().parse_line(line);
  stop = true;
  for (std::thread& thread : busy) thread.join();
  const LineParse quiet = parser().parse_line(line);

  REQUIRE(quiet.parsed == 1);
  CHECK(loaded.parsed == 1);
  CHECK(describe(line, loaded.parse) == describe(line, quiet.parse));
}

namespace {

// Lines that parse, lines that do not (no complete linkage, unknown words), several sentences.
const std::vector<std::string> kLines = {
    "the big red dog quickly chased a small cat.",
    "  The cat sat. It slept on the mat.  ",
    "Is the cat on the mat?",
    "Many of the dogs ran.",
    "Der Hund läuft schnell.",
    "cat the on sat mat.",
    "My old neighbor painted the green door yesterday because the teacher watched the children near the river.",
    "",
};

void check_same_parse(const std::string& line, const LineParse& found, const LineParse& expected) {
  INFO("line \"" << line << "\"");
  CHECK(found.sentences == expected.sentences);
  CHECK(found.parsed == expected.parsed);
  CHECK(describe(line, found.parse) == describe(line, expected.parse));
}

}  // namespace

TEST_CASE("[link-grammar] the parser threads give every line one parser's parse, in any order asked",
          "[link-grammar][parse-pool]") {
  std::vector<LineParse> expected;
  for (const std::string& line : kLines) expected.push_back(parser().parse_line(line));
  REQUIRE(expected[0].parsed == 1);
  REQUIRE(expected[4].parsed == 0);

  for (const std::size_t threads : {std::size_t{1}, std::size_t{3}}) {
    INFO(threads << " parser threads sharing one dictionary");
    ParsePool pool(threads);
    CHECK(pool.threads() == threads);
    std::vector<std::shared_ptr<PendingParse>> pending;
    for (int round = 0; round < 3; ++round) {
      for (const std::string& line : kLines) pending.push_back(pool.submit(line));
    }
    pending[5]->prefer();
    pending[2]->prefer();
    // Asked for last to first: each wait puts its document before every other.
    for (std::size_t i = pending.size(); i-- > 0;) {
      check_same_parse(kLines[i % kLines.size()], pending[i]->get(), expected[i % kLines.size()]);
      CHECK(pending[i]->done());
    }
  }
}

TEST_CASE("[link-grammar] parser threads: how many beside the model's", "[link-grammar][parse-pool]") {
  CHECK(parser_threads(2, 2) == 1);   // the model takes every core: one parser beside it
  CHECK(parser_threads(16, 2) == 14);
  CHECK(parser_threads(0, 4) == 1);   // cores unknown
  CHECK(parser_threads(128, 8) == 16);
  // This process's share of the machine: at least one core, at most all of them.
  CHECK(usable_cores() >= 1);
  CHECK(usable_cores() <= std::max(1U, std::thread::hardware_concurrency()));
}

TEST_CASE("[link-grammar] a document stopped before its parse is an error when asked for", "[link-grammar][parse-pool]") {
  std::vector<std::shared_ptr<PendingParse>> pending;
  {
    ParsePool pool(1);
    std::string slow;
    for (int word = 0; word < 59; ++word) slow += "police ";
    for (int i = 0; i < 20; ++i) pending.push_back(pool.submit(slow + std::to_string(i) + "."));
  }
  // The pool is gone: each parse is done or refused, none is waited for without end.
  int refused = 0;
  for (const auto& parse : pending) {
    CHECK(parse->done());
    try {
      parse->get();
    } catch (const std::logic_error&) {
      ++refused;
    }
  }
  CHECK(refused > 0);
}

TEST_CASE("[link-grammar] the reader hands documents out with their parses to come, and counts them all",
          "[link-grammar][parse-pool]") {
  const testing::TempDir dir;
  const std::filesystem::path path = dir.path() / "corpus.txt";
  {
    std::ofstream out(path);
    for (int round = 0; round < 30; ++round) {
      for (const std::string& line : kLines) {
        if (!line.empty()) out << line << "\n";
      }
    }
  }
  std::int64_t sentences = 0;
  std::int64_t parsed = 0;
  std::vector<std::string> texts;
  std::vector<std::shared_ptr<PendingParse>> pending;
  for (const std::size_t threads : {std::size_t{1}, std::size_t{2}}) {
    DocumentReader reader(path.string(), "link-grammar", "text", {}, threads);
    CHECK(std::string(reader.parser()) == "link-grammar");
    Document document;
    pending.clear();
    texts.clear();
    while (reader.next(document)) {
      REQUIRE(document.pending_parse != nullptr);
      CHECK(document.parse == nullptr);
      pending.push_back(document.pending_parse);
      texts.push_back(document.text);
    }
    CHECK(texts.size() == 30 * (kLines.size() - 1));
    reader.finish_parses();
    std::int64_t expected_sentences = 0;
    std::int64_t expected_parsed = 0;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      CHECK(pending[i]->done());
      const LineParse expected = parser().parse_line(texts[i]);
      check_same_parse(texts[i], pending[i]->get(), expected);
      expected_sentences += expected.sentences;
      expected_parsed += expected.parsed;
    }
    CHECK(reader.counts().sentences == expected_sentences);
    CHECK(reader.counts().parsed_sentences == expected_parsed);
    if (threads == 1) {
      sentences = expected_sentences;
      parsed = expected_parsed;
    }
    CHECK(reader.counts().sentences == sentences);
    CHECK(reader.counts().parsed_sentences == parsed);
  }
}

}  // namespace headscan
