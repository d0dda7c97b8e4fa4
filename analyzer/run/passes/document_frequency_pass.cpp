// The document frequency pass: idf for rare-word heads over the documents the analysis reads, from
// a tokenizer-only pass over the corpus before the model runs, or from --idf FILE.
#include <torch/torch.h>

#include "analyzer/run/passes/pass.h"
#include "analyzer/run/run_state.h"

namespace headscan {
namespace {

class DocumentFrequencyPass : public Pass {
 public:
  const char* name() const override { return "idf"; }
  std::optional<BatchSource> feeds() const override { return std::nullopt; }

  void run(RunState& state) override {
    const AnalysisOptions& options = state.options;
    if (!options.idf_path.empty()) {
      state.corpus_summary.idf_source = options.idf_path;
      state.frequencies =
          std::make_unique<DocumentFrequencies>(DocumentFrequencies::load(options.idf_path, *state.text.tokenizer));
    } else {
      state.corpus_summary.idf_source = "corpus";
      state.frequencies = state.count_frequencies(options.corpus_path, options.max_sequences);
    }
    state.corpus_summary.idf_documents = state.frequencies->documents();
    state.idf_table = torch::tensor(state.frequencies->idf_table(), torch::kFloat);
  }
};

}  // namespace

std::unique_ptr<Pass> make_document_frequency_pass() { return std::make_unique<DocumentFrequencyPass>(); }

}  // namespace headscan
