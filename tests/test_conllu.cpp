// The CoNLL-U reader: sentence text rebuilt from FORMs and SpaceAfter=No, multiword tokens as the
// treebank wrote them, word spans, heads and main relations; empty nodes skipped; the text checked
// against `# text`; malformed input rejected with the line.

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "analyzer/corpus/conllu.h"
#include "analyzer/errors.h"
#include "tests/fixtures.h"

using headscan::ConlluReader;
using headscan::ConlluSentence;
using headscan::InputError;
using headscan::testing::TempDir;

namespace {

// One CoNLL-U line; LEMMA, UPOS, XPOS, FEATS and DEPS are `_`.
std::string row(const std::string& id, const std::string& form, const std::string& head, const std::string& deprel,
                const std::string& misc = "_") {
  return id + "\t" + form + "\t_\t_\t_\t_\t" + head + "\t" + deprel + "\t_\t" + misc + "\n";
}

// Each word as "FORM [begin,end) head:relation", FORM cut from the text by the span; "+" before
// a later word of a multiword token.
std::vector<std::string> words(const ConlluSentence& sentence) {
  std::vector<std::string> described;
  for (const auto& word : sentence.parse.words) {
    described.push_back(fmt::format("{}{} [{},{}) {}:{}", word.continues_multiword ? "+" : "",
                                    sentence.text.substr(word.begin, word.end - word.begin), word.begin, word.end,
                                    word.head, word.relation));
  }
  return described;
}

std::vector<ConlluSentence> read_all(ConlluReader& reader) {
  std::vector<ConlluSentence> sentences;
  ConlluSentence sentence;
  while (reader.next(sentence)) sentences.push_back(sentence);
  return sentences;
}

std::vector<ConlluSentence> read_all(const std::string& path) {
  ConlluReader reader(path);
  return read_all(reader);
}

// The message of the InputError that reading `path` throws.
std::string input_error(const std::string& path) {
  try {
    read_all(path);
  } catch (const InputError& error) {
    return error.what();
  }
  FAIL("reading " << path << " threw no InputError");
  return "";
}

}  // namespace

TEST_CASE("[conllu] rebuilds the text, spans, heads and relations", "[conllu]") {
  TempDir dir;
  SECTION("SpaceAfter=No attaches the period") {
    const std::string path = dir.write("s.conllu", "# sent_id = 1\n# text = The dog barks.\n" +
                                                       row("1", "The", "2", "det") + row("2", "dog", "3", "nsubj") +
                                                       row("3", "barks", "0", "root", "SpaceAfter=No") +
                                                       row("4", ".", "3", "punct") + "\n");
    const auto sentences = read_all(path);
    REQUIRE(sentences.size() == 1);
    CHECK(sentences[0].text == "The dog barks.");
    CHECK(sentences[0].line_number == 1);
    CHECK(words(sentences[0]) ==
          std::vector<std::string>{"The [0,3) 1:det", "dog [4,7) 2:nsubj", "barks [8,13) -1:", ". [13,14) 2:punct"});
  }
  SECTION("subtypes are removed and SpaceAfter=No is found among other MISC items") {
    const std::string path = dir.write(
        "s.conllu", row("1", "It", "3", "nsubj:pass", "Gloss=it") + row("2", "was", "3", "aux:pass") +
                        row("3", "done", "0", "root") + row("4", "today", "3", "obl:tmod", "Lang=en|SpaceAfter=No|X=1") +
                        row("5", "!", "3", "punct"));
    const auto sentences = read_all(path);
    REQUIRE(sentences.size() == 1);
    CHECK(sentences[0].text == "It was done today!");
    CHECK(words(sentences[0]) == std::vector<std::string>{"It [0,2) 2:nsubj", "was [3,6) 2:aux", "done [7,11) -1:",
                                                          "today [12,17) 2:obl", "! [17,18) 2:punct"});
  }
  SECTION("HEAD `_` and DEPREL `_` give no arc; a FORM may contain spaces") {
    const std::string path = dir.write("s.conllu", row("1", "New York", "_", "_") + row("2", "is", "_", "_") +
                                                       row("3", "big", "1", "_"));
    const auto sentences = read_all(path);
    REQUIRE(sentences.size() == 1);
    CHECK(sentences[0].text == "New York is big");
    CHECK(words(sentences[0]) == std::vector<std::string>{"New York [0,8) -1:", "is [9,11) -1:", "big [12,15) -1:"});
  }
  SECTION("invalid UTF-8 is repaired and counted, spans measured in the repaired text") {
    ConlluReader reader(dir.write("s.conllu", row("1", "caf\xE9", "0", "root") + row("2", "ok", "1", "amod")));
    const auto sentences = read_all(reader);
    REQUIRE(sentences.size() == 1);
    CHECK(sentences[0].text == "caf\xEF\xBF\xBD ok");
    CHECK(words(sentences[0]) == std::vector<std::string>{"caf\xEF\xBF\xBD [0,6) -1:", "ok [7,9) 0:amod"});
    CHECK(reader.lines_with_invalid_utf8() == 1);
    CHECK(reader.invalid_utf8_replacements() == 1);
  }
}

TEST_CASE("[conllu] multiword tokens give the text as the treebank wrote it", "[conllu]") {
  TempDir dir;
  SECTION("the token's FORM and SpaceAfter=No; its words share its span") {
    // Portuguese "Eu vou dizer-lhe." (UD_Portuguese-Bosque splits dizer-lhe into dizer + lhe).
    const std::string path =
        dir.write("s.conllu", row("1", "Eu", "2", "nsubj") + row("2", "vou", "0", "root") +
                                  row("3-4", "dizer-lhe", "_", "_", "SpaceAfter=No") + row("3", "dizer", "2", "xcomp") +
                                  row("4", "lhe", "3", "iobj") + row("5", ".", "2", "punct") + "\n");
    const auto sentences = read_all(path);
    REQUIRE(sentences.size() == 1);
    CHECK(sentences[0].text == "Eu vou dizer-lhe.");
    CHECK(words(sentences[0]) == std::vector<std::string>{"Eu [0,2) 1:nsubj", "vou [3,6) -1:",
                                                          "dizer-lhe [7,16) 1:xcomp", "+dizer-lhe [7,16) 2:iobj",
                                                          ". [16,17) 1:punct"});
  }
  SECTION("English contractions and a fused token of three words; the words' FORMs and MISC give no text") {
    // EWT: "don't" = do + n't, "Google's" = Google + 's; Spanish "dámelo" = da + me + lo. A
    // SpaceAfter=No on a word inside a token is not read: the token's MISC says what follows it.
    const std::string path = dir.write(
        "s.conllu", "# sent_id = ewt-1\n# text = I don't like Google's dámelo\n" + row("1", "I", "4", "nsubj") +
                        row("2-3", "don't", "_", "_") + row("2", "do", "4", "aux", "SpaceAfter=No") +
                        row("3", "n't", "4", "advmod") + row("4", "like", "0", "root") +
                        row("5-6", "Google's", "_", "_") + row("5", "Google", "4", "obj") + row("6", "'s", "5", "case") +
                        row("7-9", "dámelo", "_", "_") + row("7", "da", "4", "parataxis") + row("8", "me", "7", "iobj") +
                        row("9", "lo", "7", "obj") + "\n");
    ConlluReader reader(path);
    const auto sentences = read_all(reader);
    REQUIRE(sentences.size() == 1);
    CHECK(sentences[0].text == "I don't like Google's dámelo");
    CHECK(words(sentences[0]) ==
          std::vector<std::string>{"I [0,1) 3:nsubj", "don't [2,7) 3:aux", "+don't [2,7) 3:advmod", "like [8,12) -1:",
                                   "Google's [13,21) 3:obj", "+Google's [13,21) 4:case", "dámelo [22,29) 3:parataxis",
                                   "+dámelo [22,29) 6:iobj", "+dámelo [22,29) 6:obj"});
    CHECK(reader.text_mismatches() == 0);
    CHECK(reader.text_warning().empty());
  }
  SECTION("a multiword token in the middle of a sentence, the next word after its space") {
    // French "Il va au marché" (au = à + le).
    const auto sentences =
        read_all(dir.write("s.conllu", row("1", "Il", "2", "nsubj") + row("2", "va", "0", "root") +
                                           row("3-4", "au", "_", "_") + row("3", "à", "5", "case") +
                                           row("4", "le", "5", "det") + row("5", "marché", "2", "obl")));
    REQUIRE(sentences.size() == 1);
    CHECK(sentences[0].text == "Il va au marché");
    CHECK(words(sentences[0]) == std::vector<std::string>{"Il [0,2) 1:nsubj", "va [3,5) -1:", "au [6,8) 4:case",
                                                          "+au [6,8) 4:det", "marché [9,16) 1:obl"});
  }
}

TEST_CASE("[conllu] the text is checked against the sentence's # text comment", "[conllu]") {
  TempDir dir;
  const std::string contraction =
      row("1", "I", "3", "nsubj") + row("2-3", "can't", "_", "_") + row("2", "ca", "4", "aux") +
      row("3", "n't", "4", "advmod") + row("4", "go", "0", "root", "SpaceAfter=No") + row("5", ".", "4", "punct");
  SECTION("spaces around = and trailing whitespace do not count; other comments are not read") {
    ConlluReader reader(dir.write("s.conllu", "#text=I can't go.  \n# text_en = I cannot go.\n" + contraction));
    const auto sentences = read_all(reader);
    REQUIRE(sentences.size() == 1);
    CHECK(sentences[0].text == "I can't go.");
    CHECK(reader.text_mismatches() == 0);
    CHECK(reader.text_warning().empty());
  }
  SECTION("a mismatch is a warning naming the sentences, quoting the first where it differs") {
    const std::string path = dir.write(
        "s.conllu", "# sent_id = s1\n# text = I can not go.\n" + contraction + "\n# text = Fine\n" +
                        row("1", "Fine", "0", "root") + "\n# text = Yes.\n" + row("1", "Yes", "0", "root") + "\n" +
                        "# sent_id = s4\n# text = OK\n" + row("1", "ok", "0", "root") + "\n# text = No\n" +
                        row("1", "no", "0", "root") + "\n# text = Go\n" + row("1", "go", "0", "root"));
    ConlluReader reader(path);
    const auto sentences = read_all(reader);
    REQUIRE(sentences.size() == 6);
    CHECK(sentences[0].text == "I can't go.");
    CHECK(reader.text_mismatches() == 5);
    CHECK(reader.text_warning() ==
          path + ": 5 sentence(s) whose words do not spell their `# text` comment, and the model reads the words' "
                 "text: line 1 (sent_id s1): the words read \"…can't go.\" where `# text` has \"…can not go.\"; line "
                 "13; line 16 (sent_id s4); and 2 more; check their FORMs, multiword tokens and SpaceAfter=No");
  }
  SECTION("a long text is quoted in part, not cutting a character") {
    const std::string long_words = std::string(29, 'a') + "é" + "bcd";  // the text's bytes 31 and 32
    const std::string path = dir.write("s.conllu", "# text = x " + long_words + "z\n" + row("1", "x", "0", "root") +
                                                       row("2", long_words, "1", "dep"));
    ConlluReader reader(path);
    read_all(reader);
    CHECK_THAT(reader.text_warning(),
               Catch::Contains("line 1: the words read \"…" + std::string(29, 'a') + "…\" where `# text` has \"…" +
                               std::string(29, 'a') + "…\""));
  }
}

TEST_CASE("[conllu] skips empty nodes and comments", "[conllu]") {
  TempDir dir;
  SECTION("an empty node is skipped entirely") {
    const std::string path =
        dir.write("s.conllu", row("1", "Sue", "2", "nsubj") + row("2", "likes", "0", "root") +
                                  row("3", "coffee", "2", "obj") + row("4", "and", "5", "cc") +
                                  row("5", "Bill", "2", "conj") + row("5.1", "likes", "_", "_") +
                                  row("6", "tea", "5", "orphan", "SpaceAfter=No") + row("7", ".", "2", "punct"));
    const auto sentences = read_all(path);
    REQUIRE(sentences.size() == 1);
    CHECK(sentences[0].text == "Sue likes coffee and Bill tea.");
    CHECK(words(sentences[0]) ==
          std::vector<std::string>{"Sue [0,3) 1:nsubj", "likes [4,9) -1:", "coffee [10,16) 1:obj", "and [17,20) 4:cc",
                                   "Bill [21,25) 1:conj", "tea [26,29) 4:orphan", ". [29,30) 1:punct"});
  }
  SECTION("a sentence of comments, ranges or empty nodes only is skipped silently") {
    const std::string path = dir.write("s.conllu", "# just a comment\n\n" + row("1-2", "del", "_", "_") + "\n" +
                                                       row("0.1", "x", "_", "_") + "\n" + row("1", "Yes", "0", "root"));
    const auto sentences = read_all(path);
    REQUIRE(sentences.size() == 1);
    CHECK(sentences[0].text == "Yes");
    CHECK(sentences[0].line_number == 7);
  }
}

TEST_CASE("[conllu] reads sentences one at a time", "[conllu]") {
  TempDir dir;
  SECTION("several sentences, extra blank lines, no blank line after the last") {
    const std::string content = "# sent_id = a\n" + row("1", "Hi", "0", "root", "SpaceAfter=No") +
                                row("2", ".", "1", "punct") + "\n\n" + row("1", "Yes", "0", "root") + "\n" +
                                "# sent_id = c\n" + row("1", "No", "0", "root") + row("2", "way", "1", "obj");
    ConlluReader reader(dir.write("s.conllu", content));
    CHECK(reader.total_bytes() == content.size());
    ConlluSentence sentence;
    REQUIRE(reader.next(sentence));
    CHECK(sentence.text == "Hi.");
    CHECK(sentence.line_number == 1);
    // Streaming: only the first sentence and its blank line have been read.
    CHECK(reader.bytes_read() == content.find("\n\n") + 2);
    CHECK(reader.lines_read() == 4);

    REQUIRE(reader.next(sentence));
    CHECK(sentence.text == "Yes");
    CHECK(sentence.line_number == 6);
    REQUIRE(reader.next(sentence));
    CHECK(sentence.text == "No way");
    CHECK(sentence.line_number == 8);
    CHECK(words(sentence) == std::vector<std::string>{"No [0,2) -1:", "way [3,6) 0:obj"});
    CHECK_FALSE(reader.next(sentence));
    CHECK_FALSE(reader.next(sentence));
    CHECK(reader.lines_read() == 10);
    CHECK(reader.sentences_read() == 3);
    CHECK(reader.bytes_read() == content.size());
    CHECK(reader.lines_with_invalid_utf8() == 0);
  }
  SECTION("CRLF line ends and a UTF-8 byte order mark") {
    const std::string content = "\xEF\xBB\xBF# c\r\n1\tA\t_\t_\t_\t_\t0\troot\t_\tSpaceAfter=No\r\n"
                                "2\t.\t_\t_\t_\t_\t1\tpunct\t_\t_\r\n\r\n1\tB\t_\t_\t_\t_\t0\troot\t_\t_\r\n";
    ConlluReader reader(dir.write("s.conllu", content));
    const auto sentences = read_all(reader);
    REQUIRE(sentences.size() == 2);
    CHECK(sentences[0].text == "A.");
    CHECK(sentences[0].line_number == 1);
    CHECK(words(sentences[0]) == std::vector<std::string>{"A [0,1) -1:", ". [1,2) 0:punct"});
    CHECK(sentences[1].text == "B");
    CHECK(sentences[1].line_number == 5);
    CHECK(reader.bytes_read() == content.size());
  }
  SECTION("a file without sentences") {
    ConlluReader empty(dir.write("empty.conllu", ""));
    ConlluSentence sentence;
    CHECK_FALSE(empty.next(sentence));
    ConlluReader comments(dir.write("comments.conllu", "\n# nothing here\n\n"));
    CHECK_FALSE(comments.next(sentence));
    CHECK(comments.lines_read() == 3);
    CHECK(comments.sentences_read() == 0);
  }
}

TEST_CASE("[conllu] rejects malformed lines with their line number", "[conllu]") {
  TempDir dir;
  const std::string good = row("1", "Fine", "0", "root") + "\n";  // lines 1-2
  SECTION("wrong column count") {
    const std::string path = dir.write("bad.conllu", good + "# c\n" + row("1", "The", "0", "root") +
                                                         "2\tdog\tdog\tNOUN\tNN\t_\t1\n");
    CHECK(input_error(path) ==
          path + ":5: expected 10 tab-separated fields (CoNLL-U), found 7; check the line is tab-separated");
    const std::string spaces = dir.write("spaces.conllu", "1 The _ _ _ _ 0 root _ _\n");
    CHECK(input_error(spaces) ==
          spaces + ":1: expected 10 tab-separated fields (CoNLL-U), found 1; check the line is tab-separated");
    REQUIRE_THROWS_AS(read_all(spaces), InputError);
  }
  SECTION("non-numeric or malformed ID") {
    const std::string path = dir.write("bad.conllu", good + row("1", "A", "0", "root") + row("x", "B", "1", "dep"));
    CHECK(input_error(path) == path + ":4: expected an ID: a word number (1, 2, ...), a multiword range (3-4) or an "
                                      "empty node (5.1), found `x`; fix the ID column");
    const std::string range = dir.write("range.conllu", row("2-1", "B", "_", "_"));
    CHECK_THAT(input_error(range), Catch::StartsWith(range + ":1: expected an ID") && Catch::Contains("found `2-1`"));
  }
  SECTION("ID out of order: a missing blank line between sentences") {
    const std::string path =
        dir.write("bad.conllu", good + "# sent_id = 2\n" + row("1", "A", "0", "root") + row("2", "B", "1", "dep") +
                                    "# sent_id = 3\n" + row("1", "C", "0", "root"));
    CHECK(input_error(path) == path + ":7: expected word ID 3 (IDs count 1, 2, 3, ... in each sentence), found 1; "
                                      "number the words in order and end each sentence with a blank line");
    const std::string gap = dir.write("gap.conllu", row("1", "A", "0", "root") + row("3", "B", "1", "dep"));
    CHECK_THAT(input_error(gap), Catch::StartsWith(gap + ":2: expected word ID 2 ") && Catch::Contains("found 3;"));
  }
  SECTION("empty FORM") {
    const std::string path = dir.write("bad.conllu", good + row("1", "A", "0", "root") + row("2", "", "1", "dep"));
    CHECK(input_error(path) == path + ":4: expected a FORM for word 2, found an empty field; write the word (or _)");
  }
  SECTION("HEAD not numeric") {
    const std::string path = dir.write("bad.conllu", good + row("1", "A", "0", "root") + row("2", "B", "one", "dep"));
    CHECK(input_error(path) ==
          path + ":4: expected HEAD to be a word ID (0 for the root) or _, found `one`; fix the HEAD column of word 2");
  }
  SECTION("HEAD out of range: the line of the offending word, not of the sentence's end") {
    const std::string path = dir.write("bad.conllu", good + row("1", "A", "0", "root") + row("2", "B", "4", "dep") +
                                                         row("3", "C", "1", "dep") + "\n");
    CHECK(input_error(path) == path + ":4: expected HEAD of word 2 between 0 (root) and 3 (the words of the "
                                      "sentence), found 4; fix the HEAD column");
    const std::string negative =
        dir.write("negative.conllu", row("1", "A", "0", "root") + row("2", "B", "-1", "dep"));
    CHECK_THAT(input_error(negative),
               Catch::StartsWith(negative + ":2: expected HEAD of word 2 between 0") && Catch::Contains("found -1;"));
  }
  SECTION("an empty multiword token FORM") {
    const std::string path = dir.write("bad.conllu", row("1-2", "", "_", "_") + row("1", "de", "0", "root") +
                                                         row("2", "el", "1", "det"));
    CHECK(input_error(path) ==
          path + ":1: expected a FORM for multiword token 1-2, found an empty field; write the token as the text has it");
  }
  SECTION("overlapping multiword ranges") {
    const std::string path = dir.write("bad.conllu", row("1-3", "abc", "_", "_") + row("1", "a", "0", "root") +
                                                         row("2-3", "bc", "_", "_") + row("2", "b", "1", "dep") +
                                                         row("3", "c", "1", "dep"));
    CHECK(input_error(path) == path + ":3: expected a multiword range after the words of range 1-3, found 2-3; a word "
                                      "belongs to one multiword token at most");
  }
  SECTION("a range whose words are missing") {
    const std::string path = dir.write("bad.conllu", good + row("1-2", "del", "_", "_") + row("1", "de", "0", "root"));
    CHECK(input_error(path) == path + ":3: expected the words of range 1-2, found the sentence ends at word 1; "
                                      "add the range's words after it");
  }
  SECTION("a range not placed before its first word") {
    const std::string path = dir.write("bad.conllu", row("1", "a", "0", "root") + row("2", "de", "1", "dep") +
                                                         row("3", "el", "1", "dep") + row("2-3", "del", "_", "_"));
    CHECK(input_error(path) == path + ":4: expected a multiword range starting at word 4, found 2-3; put the range "
                                      "line just before its first word");
  }
}

TEST_CASE("[conllu] rejects cycles in the HEAD graph", "[conllu]") {
  TempDir dir;
  SECTION("a word that is its own head") {
    const std::string path = dir.write("bad.conllu", "# c\n" + row("1", "A", "0", "root") + row("2", "B", "2", "dep"));
    CHECK(input_error(path) == path + ":3: expected HEADs to form a tree, found a cycle 2 -> 2 (word 2 is its own "
                                      "ancestor); fix the HEAD of one of these words");
  }
  SECTION("two words heading each other") {
    const std::string path = dir.write("bad.conllu", "# c\n" + row("1", "A", "2", "dep") + row("2", "B", "3", "dep") +
                                                         row("3", "C", "2", "dep"));
    CHECK(input_error(path) == path + ":3: expected HEADs to form a tree, found a cycle 2 -> 3 -> 2 (word 2 is its own "
                                      "ancestor); fix the HEAD of one of these words");
  }
  SECTION("a longer cycle is named from its lowest word") {
    const std::string path = dir.write("bad.conllu", row("1", "A", "4", "dep") + row("2", "B", "4", "dep") +
                                                         row("3", "C", "2", "dep") + row("4", "D", "3", "dep"));
    CHECK(input_error(path) == path + ":2: expected HEADs to form a tree, found a cycle 2 -> 4 -> 3 -> 2 (word 2 is its "
                                      "own ancestor); fix the HEAD of one of these words");
  }
}

TEST_CASE("[conllu] rejects files that are not CoNLL-U text", "[conllu]") {
  TempDir dir;
  const std::string missing = (dir / "missing.conllu").string();
  CHECK_THROWS_MATCHES(ConlluReader(missing), InputError,
                       Catch::Message(missing + ": expected a UTF-8 CoNLL-U file (Universal Dependencies), found "
                                                "nothing at this path; check the path"));
  const std::string directory = dir.path().string();
  CHECK_THROWS_MATCHES(ConlluReader(directory), InputError,
                       Catch::Message(directory + ": expected a UTF-8 CoNLL-U file (Universal Dependencies), found "
                                                  "a directory; give a .conllu file inside it"));
  const std::string binary = dir.write("binary.conllu", std::string("1\tA\0x", 5));
  CHECK_THROWS_MATCHES(ConlluReader(binary), InputError,
                       Catch::Message(binary + ": expected a UTF-8 CoNLL-U file (Universal Dependencies), found "
                                               "binary data (NUL byte at offset 3); give a text file"));
}
