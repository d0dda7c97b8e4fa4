// The --idf file: written and read back, and every malformed line refused with its number
// (issue 12: fractional document frequencies were accepted).

#include <catch2/catch.hpp>

#include <string>

#include "analyzer/corpus/document_frequencies.h"
#include "analyzer/errors.h"
#include "tests/fixtures.h"
#include "tests/tokenizer_testing.h"

using Catch::Contains;
using headscan::DocumentFrequencies;
using headscan::testing::TempDir;

namespace {

std::unique_ptr<headscan::Tokenizer> words() {
  using namespace tokenizer_testing;
  return build(tokenizer_spec(wordlevel_model({{"<unk>", 0}, {"the", 1}, {"cat", 2}, {"Ġthe", 3}}), nullptr,
                              {{"type", "WhitespaceSplit"}}));
}

std::string load_error(const TempDir& dir, const std::string& text) {
  const auto tokenizer = words();
  try {
    DocumentFrequencies::load(dir.write("idf.txt", text), *tokenizer);
  } catch (const headscan::InputError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("idf files round-trip and skip unknown pieces", "[corpus][idf]") {
  const TempDir dir;
  const auto tokenizer = words();
  DocumentFrequencies counted(tokenizer->vocab_size());
  counted.add_document(tokenizer->encode("the cat the"), *tokenizer);
  counted.add_document(tokenizer->encode("the"), *tokenizer);
  counted.save((dir / "idf.txt").string(), *tokenizer);
  const DocumentFrequencies loaded = DocumentFrequencies::load((dir / "idf.txt").string(), *tokenizer);
  CHECK(loaded.documents() == 2);
  CHECK(loaded.frequency(1) == 2);
  CHECK(loaded.frequency(2) == 1);
  const DocumentFrequencies other = DocumentFrequencies::load(
      dir.write("other.txt", "headscan-idf 1\ndocuments 5\n4 \"\\u0120the\"\n3 \"dog\"\n\n0 \"cat\"\n"), *tokenizer);
  CHECK(other.documents() == 5);
  CHECK(other.frequency(3) == 4);
  CHECK(other.frequency(2) == 0);
}

TEST_CASE("idf files: malformed lines are refused with their number", "[corpus][idf][errors]") {
  const TempDir dir;
  const std::string head = "headscan-idf 1\ndocuments 10\n";
  SECTION("a fractional df") {
    CHECK_THAT(load_error(dir, head + "1.5 \"the\"\n"),
               Contains("idf.txt:3:") && Contains("whole number 0 <= df <= N") && Contains("found \"1.5 \"the\"\""));
  }
  SECTION("negative, signed, exponent, beyond N, beyond 64 bits") {
    for (const std::string df : {"-1", "+1", "1e1", "11", "99999999999999999999", " 1", ""}) {
      CAPTURE(df);
      CHECK_THAT(load_error(dir, head + df + " \"the\"\n"), Contains("idf.txt:3:"));
    }
  }
  SECTION("the document count") {
    for (const std::string documents : {"2.5", "-1", "", "5 extra", "1e3"}) {
      CAPTURE(documents);
      CHECK_THAT(load_error(dir, "headscan-idf 1\ndocuments " + documents + "\n"), Contains("idf.txt:2:"));
    }
    CHECK_THAT(load_error(dir, "headscan-idf 1\n"), Contains("idf.txt:2:"));
  }
  SECTION("the first line") { CHECK_THAT(load_error(dir, "headscan-idf 2\n"), Contains("idf.txt:1:")); }
  SECTION("a missing or malformed token") {
    CHECK_THAT(load_error(dir, head + "3\n"), Contains("idf.txt:3:") && Contains("no space"));
    CHECK_THAT(load_error(dir, head + "3 the\n"), Contains("idf.txt:3:"));
    CHECK_THAT(load_error(dir, head + "3 \"the\n"), Contains("idf.txt:3:"));
    CHECK_THAT(load_error(dir, head + "3 [[[\"the\"]]]\n"), Contains("idf.txt:3:"));
    CHECK_THAT(load_error(dir, head + "3 \"the\" \"cat\"\n"), Contains("idf.txt:3:"));
  }
  SECTION("a token given twice") {
    CHECK_THAT(load_error(dir, head + "3 \"the\"\n4 \"cat\"\n5 \"the\"\n"),
               Contains("idf.txt:5:") && Contains("given already on line 3"));
  }
  SECTION("a long line is quoted in part") {
    const std::string message = load_error(dir, head + "1.5 \"" + std::string(100000, 'x') + "\"\n");
    CHECK_THAT(message, Contains("xxx...\""));
    CHECK(message.size() < 500);
  }
}

// `headscan idf --force` replaces a file only when it is whole as save() writes it: a file of the
// user's that starts like one (its header, or a few lines) is not.
TEST_CASE("idf files: only a whole file as headscan writes it counts as one", "[corpus][idf]") {
  const TempDir dir;
  const auto tokenizer = words();
  DocumentFrequencies counted(tokenizer->vocab_size());
  counted.add_document(tokenizer->encode("the cat Ġthe"), *tokenizer);
  counted.add_document(tokenizer->encode("the"), *tokenizer);
  counted.save((dir / "saved.txt").string(), *tokenizer);
  CHECK(DocumentFrequencies::is_frequency_file((dir / "saved.txt").string()));
  CHECK(DocumentFrequencies::is_frequency_file(dir.write("none.txt", "headscan-idf 1\ndocuments 0\n")));

  const std::string head = "headscan-idf 1\ndocuments 2\n";
  const std::string line = "2 \"the\"\n";
  for (const std::string& text : {
           std::string("headscan-idf 1\n"),                      // no count of documents
           std::string("headscan-idf 1\nmy notes\n"),            // the header, then the user's text
           head + line + "my notes\n",                          // a whole file, then the user's text
           head + line + "\n",                                  // an empty line
           head + "2 \"the\"",                                  // the last line not ended
           head + "3 \"the\"\n",                                // df > N
           head + "0 \"the\"\n",                                // df 0: save() leaves it out
           head + "2 \"\\u0120the\"\n",                         // quoted otherwise than save() does
           head + "2 \"the\"\r\n",                              // a Windows line end
           head + "2 [\"the\"]\n",                              // not a string
           std::string("headscan-idf 1\ndocuments 2"),          // the header cut
       }) {
    CAPTURE(text);
    CHECK_FALSE(DocumentFrequencies::is_frequency_file(dir.write("user.txt", text)));
  }
  CHECK_FALSE(DocumentFrequencies::is_frequency_file((dir / "missing.txt").string()));
}

// Every file headscan writes goes through CheckedFile: a full disk (/dev/full answers every write
// with ENOSPC) is an error naming the file and the reason, not a short file.
TEST_CASE("idf files: a full disk is an error naming the file", "[corpus][idf]") {
  const auto tokenizer = words();
  DocumentFrequencies counted(tokenizer->vocab_size());
  counted.add_document(tokenizer->encode("the cat"), *tokenizer);
  CHECK_THROWS_WITH(counted.save("/dev/full", *tokenizer), "/dev/full: cannot write (No space left on device)");
  const TempDir dir;
  CHECK_THROWS_WITH(counted.save((dir / "missing" / "idf.txt").string(), *tokenizer),
                    Contains("missing/idf.txt: cannot write (No such file or directory)"));
}
