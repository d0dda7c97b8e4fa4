#include "analyzer/run/count_warnings.h"

#include <fmt/format.h>

namespace headscan {
namespace {

// Fewer parsed sentences than this give too few arcs for most relations to reach their support.
constexpr std::int64_t kFewParsedSentences = 50;

}  // namespace

std::vector<std::string> count_warnings(const std::string& corpus_path, const CorpusSummary& corpus,
                                        std::int64_t invalid_utf8_replacements, const Thresholds& thresholds,
                                        std::int64_t max_sequences) {
  std::vector<std::string> warnings;
  if (corpus.lines_with_invalid_utf8 > 0) {
    warnings.push_back(fmt::format("{}: {} line(s) had invalid UTF-8, replaced by U+FFFD ({} replacement(s))",
                                   corpus_path, corpus.lines_with_invalid_utf8, invalid_utf8_replacements));
  }
  // Syntactic labels need parses: say so when few were had. --parser none asks for none, so it is
  // no surprise worth a warning (the report's summary still says that syntactic labels need them).
  if (corpus.parser != "none" && corpus.parsed_sentences < kFewParsedSentences) {
    warnings.push_back(fmt::format(
        "{} parsed {} of {} sentence(s): syntactic labels need parses (support of {} arcs per relation); "
        "link-grammar parses English only, so for other languages give a CoNLL-U corpus (.conllu) from a parser "
        "for that language",
        corpus.parser, corpus.parsed_sentences, corpus.sentences, thresholds.at("syntactic_support")));
  }
  if (corpus.truncated) warnings.push_back(fmt::format("stopped after --max-sequences {}", max_sequences));
  return warnings;
}

}  // namespace headscan
