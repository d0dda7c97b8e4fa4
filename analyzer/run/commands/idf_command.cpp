#include "analyzer/run/commands/idf_command.h"

#include <optional>

#include <fmt/format.h>

#include "analyzer/errors.h"
#include "analyzer/run/output/output_file.h"
#include "analyzer/run/output/spooled_input.h"
#include "analyzer/run/run_state.h"

namespace headscan {
namespace {

// Counts the corpus at `corpus_path` (standard input's copy when the user gave "-").
IdfSummary count_and_write(const IdfOptions& options, const std::string& corpus_path, const OutputFile& output) {
  AnalysisOptions analysis;
  analysis.model_path = options.model_path;
  analysis.corpus_path = corpus_path;
  analysis.text_field = options.text_field;
  RunState state(analysis);
  state.text = load_text_setup(options.model_path, options.tokenizer_path, options.max_length);
  const std::unique_ptr<DocumentFrequencies> frequencies = state.count_frequencies(corpus_path, options.max_sequences);
  output.write([&](const std::string& path) { frequencies->save(path, *state.text.tokenizer); });
  return IdfSummary{state.text.tokenizer_description, frequencies->documents(), state.warnings};
}

}  // namespace

IdfSummary run_idf(const IdfOptions& options) {
  if (options.output_path.empty()) throw InputError("headscan idf: give the file to write with -o FILE");
  // Checked before the corpus is read.
  const OutputFile output(options.output_path, options.force,
                          {options.model_path, options.tokenizer_path, options.corpus_path}, "document-frequency file",
                          DocumentFrequencies::is_frequency_file);
  if (options.corpus_path != "-") return count_and_write(options, options.corpus_path, output);
  const SpooledInput spooled;  // standard input, read once
  try {
    IdfSummary summary = count_and_write(options, spooled.path(), output);
    for (std::string& warning : summary.warnings) warning = spooled.named(warning);
    return summary;
  } catch (...) {
    spooled.rethrow_named();
  }
}

}  // namespace headscan
