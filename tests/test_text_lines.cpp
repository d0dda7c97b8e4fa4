// The corpus reader: one document per line, empty lines skipped, invalid UTF-8 repaired, binary
// files and missing paths rejected with messages that say what to do.

#include <archive.h>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "analyzer/corpus/documents.h"
#include "analyzer/corpus/text_lines.h"
#include "analyzer/errors.h"
#include "tests/fixtures.h"

using headscan::CorpusLine;
using headscan::TextCorpusReader;
using headscan::InputError;
using headscan::repair_utf8;
using headscan::testing::TempDir;

namespace {

std::vector<std::pair<std::size_t, std::string>> read_all(TextCorpusReader& reader) {
  std::vector<std::pair<std::size_t, std::string>> lines;
  CorpusLine line;
  while (reader.next(line)) lines.emplace_back(line.line_number, line.text);
  return lines;
}

std::pair<std::string, std::size_t> repaired(std::string text) {
  const std::size_t count = repair_utf8(text);
  return {text, count};
}

const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

TEST_CASE("repair_utf8 replaces maximal invalid subparts", "[corpus][utf8]") {
  using Result = std::pair<std::string, std::size_t>;
  SECTION("valid text is unchanged") {
    CHECK(repaired("plain ascii") == Result{"plain ascii", 0});
    CHECK(repaired("ÀB 我 😀 \xF4\x8F\xBF\xBF") == Result{"ÀB 我 😀 \xF4\x8F\xBF\xBF", 0});  // U+10FFFF is valid
  }
  SECTION("a stray byte") {
    CHECK(repaired(std::string("a\xFF") + "b") == Result{"a" + kReplacement + "b", 1});
  }
  SECTION("a truncated 3-byte sequence at the end is one replacement") {
    CHECK(repaired("x\xE2\x82") == Result{"x" + kReplacement, 1});
    CHECK(repaired("\xE2\x82y") == Result{kReplacement + "y", 1});
    CHECK(repaired("\xF0\x9F\x98") == Result{kReplacement, 1});
  }
  SECTION("an overlong encoding is one replacement per byte") {
    CHECK(repaired("\xC0\xAF") == Result{kReplacement + kReplacement, 2});
    CHECK(repaired("\xE0\x80\xAF") == Result{kReplacement + kReplacement + kReplacement, 3});
  }
  SECTION("a surrogate is invalid") {
    CHECK(repaired("\xED\xA0\x80") == Result{kReplacement + kReplacement + kReplacement, 3});
  }
  SECTION("a code point above U+10FFFF is invalid") {
    CHECK(repaired("\xF4\x90\x80\x80") == Result{kReplacement + kReplacement + kReplacement + kReplacement, 4});
  }
}

TEST_CASE("TextCorpusReader reads one document per line", "[corpus]") {
  TempDir dir;
  SECTION("empty lines are skipped, CRLF accepted, the last line needs no newline") {
    const std::string content = "first\n\nthird\r\n\r\nlast";
    TextCorpusReader reader(dir.write("corpus.txt", content));
    CHECK(reader.total_bytes() == content.size());
    CHECK(read_all(reader) ==
          std::vector<std::pair<std::size_t, std::string>>{{1, "first"}, {3, "third"}, {5, "last"}});
    CHECK(reader.lines_read() == 5);
    CHECK(reader.documents_read() == 3);
    CHECK(reader.bytes_read() == content.size());
    CHECK(reader.lines_with_invalid_utf8() == 0);
  }
  SECTION("bytes_read advances with each line and its newline") {
    TextCorpusReader reader(dir.write("corpus.txt", "ab\n\ncd\n"));
    CorpusLine line;
    REQUIRE(reader.next(line));
    CHECK(reader.bytes_read() == 3);
    REQUIRE(reader.next(line));
    CHECK(reader.bytes_read() == 7);
    CHECK_FALSE(reader.next(line));
    CHECK(reader.lines_read() == 3);
  }
  SECTION("invalid UTF-8 is replaced and counted") {
    TextCorpusReader reader(dir.write("corpus.txt", "ok\nbad \xFF here \xC0\xAF\nfine\n"));
    CHECK(read_all(reader) ==
          std::vector<std::pair<std::size_t, std::string>>{
              {1, "ok"}, {2, "bad " + kReplacement + " here " + kReplacement + kReplacement}, {3, "fine"}});
    CHECK(reader.lines_with_invalid_utf8() == 1);
    CHECK(reader.invalid_utf8_replacements() == 3);
  }
  SECTION("a UTF-8 byte order mark is not part of the first document") {
    TextCorpusReader reader(dir.write("corpus.txt", "\xEF\xBB\xBFhello\nworld"));
    CHECK(read_all(reader) == std::vector<std::pair<std::size_t, std::string>>{{1, "hello"}, {2, "world"}});
  }
  SECTION("an empty file has no documents") {
    TextCorpusReader reader(dir.write("corpus.txt", ""));
    CorpusLine line;
    CHECK_FALSE(reader.next(line));
    CHECK(reader.total_bytes() == 0);
  }
  SECTION("a few invalid bytes in text do not make it binary") {
    std::string latin1 =
        "caf\xE9 au lait, cr\xE8me br\xFBl\xE9"
        "e\n";
    TextCorpusReader reader(dir.write("latin1.txt", latin1));
    CHECK(read_all(reader).size() == 1);
    CHECK(reader.invalid_utf8_replacements() == 4);
  }
}

TEST_CASE("TextCorpusReader rejects what is not a text corpus", "[corpus][errors]") {
  TempDir dir;
  SECTION("a NUL byte") {
    const std::string path = dir.write("corpus.bin", std::string("abc\0def", 7));
    CHECK_THROWS_AS(TextCorpusReader(path), InputError);
    CHECK_THROWS_WITH(TextCorpusReader(path), Catch::Contains("corpus.bin") && Catch::Contains("NUL byte at offset 3") &&
                                              Catch::Contains("give a text file"));
  }
  SECTION("mostly invalid UTF-8") {
    std::string noise;
    for (int i = 0; i < 1000; ++i) noise += static_cast<char>(0x80 + i % 100);
    CHECK_THROWS_WITH(TextCorpusReader(dir.write("noise.dat", noise)), Catch::Contains("noise.dat") &&
                                                                       Catch::Contains("binary data") &&
                                                                       Catch::Contains("not valid UTF-8"));
  }
  SECTION("UTF-16 text") {
    CHECK_THROWS_WITH(TextCorpusReader(dir.write("utf16.txt", std::string("\xFF\xFEh\0i\0", 6))),
                      Catch::Contains("UTF-16") && Catch::Contains("iconv"));
  }
  SECTION("a missing file") {
    const std::string path = (dir / "absent.txt").string();
    CHECK_THROWS_AS(TextCorpusReader(path), InputError);
    CHECK_THROWS_WITH(TextCorpusReader(path), Catch::Contains("absent.txt") && Catch::Contains("check the path"));
  }
  SECTION("a directory") { CHECK_THROWS_WITH(TextCorpusReader(dir.path().string()), Catch::Contains("directory")); }
}

TEST_CASE("JSON Lines corpora: one object per line, the document in a string field", "[corpus][jsonl]") {
  TempDir dir;
  const std::string path = dir.write(
      "corpus.jsonl",
      "{\"id\": 1, \"text\": \"first document\", \"meta\": {\"source\": [1, 2]}}\n"
      "\n"
      "{\"text\": \"\"}\n"
      "{\"text\": \"two\\nlines \\u00e9\", \"body\": \"other\"}\r\n");
  CHECK(headscan::is_jsonl_path(path));
  CHECK(headscan::is_jsonl_path("data/C4.JSONL"));
  CHECK_FALSE(headscan::is_jsonl_path("corpus.json"));
  TextCorpusReader reader(path, std::string("text"));
  using Lines = std::vector<std::pair<std::size_t, std::string>>;
  // Empty lines and empty documents are skipped; line numbers are the file's.
  CHECK(read_all(reader) == Lines{{1, "first document"}, {4, "two\nlines \xC3\xA9"}});
  CHECK(reader.documents_read() == 2);
  CHECK(reader.lines_read() == 4);

  TextCorpusReader other_field(path, std::string("body"));
  CorpusLine line;
  CHECK_THROWS_WITH(other_field.next(line), Catch::Contains(path + ":1: expected JSON Lines") &&
                                                Catch::Contains("found an object without it") &&
                                                Catch::Contains("--text-field"));
}

TEST_CASE("JSON Lines lines that are not an object with the string field are refused with their line", "[corpus][jsonl]") {
  TempDir dir;
  struct Case {
    std::string line;
    std::string found;
  };
  for (const Case& bad : {Case{"not json at all", "a line that is not JSON"},
                          Case{"[\"text\", \"a list\"]", "a JSON value that is not an object"},
                          Case{"{\"text\": 5}", "an object whose field is not a string"},
                          Case{"{\"text\": null}", "an object whose field is not a string"},
                          Case{"{\"txt\": \"typo\"}", "an object without it"},
                          Case{"{\"text\": \"\\ud800\"}", "a line that is not JSON"},
                          Case{std::string(1000, '[') + std::string(1000, ']'), "nested at most 512 deep"}}) {
    INFO(bad.line.substr(0, 40));
    const std::string path = dir.write("bad.jsonl", "{\"text\": \"fine\"}\n" + bad.line + "\n");
    TextCorpusReader reader(path, std::string("text"));
    CorpusLine line;
    REQUIRE(reader.next(line));
    CHECK_THROWS_AS(reader.next(line), InputError);
    TextCorpusReader again(path, std::string("text"));
    again.next(line);
    CHECK_THROWS_WITH(again.next(line), Catch::Contains(path + ":2") && Catch::Contains(bad.found));
  }
}

// A line over kLongLineBytes comes in parts, never whole: the parts are the line's own cuts
// (line_part_end over the whole line, after its byte order mark and '\r' are removed and its
// invalid UTF-8 replaced), from a plain file as from a compressed stream; what a caller does not
// read of a line is skipped by the next call.
TEST_CASE("long lines come in parts that join to the line", "[corpus][long-lines]") {
  TempDir dir;
  // Words, a run of spaces, invalid bytes and characters of 2 to 4 bytes, so that reads end inside
  // characters and parts end at every kind of cut.
  std::string line;
  for (int i = 0; line.size() < 3 * headscan::kLongLineBytes; ++i) {
    line += "w" + std::to_string(i % 97);
    line += i % 7 == 0 ? "    " : " ";
    if (i % 1001 == 0) line += "\xE4\xB8\x96\xF0\x9F\x98\x80";
    if (i % 1777 == 0) line += "\xFF\xE2\x82";
    if (i % 50000 == 0) line += std::string(300000, 'x');  // a part with no whitespace to cut at
  }
  const std::string file_text = "\xEF\xBB\xBF" + line + "\r\nshort line\nw1 w2\n";
  std::string expected = line;
  const std::size_t replacements = repair_utf8(expected);
  std::vector<std::string> expected_parts;
  for (std::size_t begin = 0; begin < expected.size();) {
    const std::size_t end = headscan::line_part_end(expected, begin);
    expected_parts.push_back(expected.substr(begin, end - begin));
    begin = end;
  }
  const std::string plain = dir.write("long.txt", file_text);
  const std::string packed = dir.write("long.txt.gz", headscan::testing::compressed(file_text, ARCHIVE_FILTER_GZIP));
  for (const std::string& path : {plain, packed}) {
    INFO(path);
    TextCorpusReader reader(path);
    CorpusLine first;
    REQUIRE(reader.next(first));
    CHECK(first.more);
    std::vector<std::string> parts{first.text};
    for (std::string part; reader.next_part(part);) parts.push_back(part);
    CHECK(parts.size() == expected_parts.size());
    CHECK(parts == expected_parts);
    CHECK(reader.invalid_utf8_replacements() == replacements);
    CHECK(reader.lines_with_invalid_utf8() == 1);
    CorpusLine next;
    REQUIRE(reader.next(next));
    CHECK(next.text == "short line");
    CHECK(next.line_number == 2);
    CHECK_FALSE(next.more);

    // Only the first part read: the next call skips the rest.
    TextCorpusReader skipping(path);
    REQUIRE(skipping.next(first));
    REQUIRE(skipping.next(next));
    CHECK(next.text == "short line");
    CHECK(next.line_number == 2);
    REQUIRE(skipping.next(next));
    CHECK(next.text == "w1 w2");
    CHECK_FALSE(skipping.next(next));
  }

  // The parsing reader (link-grammar on threads of its own) hands the long line's parts over and goes
  // on after it, whether they were all read or not.
  for (const bool read_parts : {true, false}) {
    headscan::DocumentReader documents(plain, "link-grammar");
    headscan::Document document;
    REQUIRE(documents.next(document));
    CHECK(document.more);
    CHECK(document.parse == nullptr);
    std::size_t parts = 1;
    for (std::string part; read_parts && documents.next_part(part);) ++parts;
    if (read_parts) CHECK(parts == expected_parts.size());
    REQUIRE(documents.next(document));
    CHECK(document.text == "short line");
    CHECK(document.line_number == 2);
    REQUIRE(documents.next(document));
    CHECK(document.text == "w1 w2");
    CHECK_FALSE(documents.next(document));
    CHECK(documents.counts().lines_read == 3);
  }
}
