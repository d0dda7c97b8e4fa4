// The document frequency pass: idf for rare-word heads over the documents the analysis reads, from
// a tokenizer-only pass over the corpus before the model runs, or from --idf FILE.
#include <torch/torch.h>

#include "analyzer/run/pass.h"
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
      state.frequencies = std::make_unique<DocumentFrequencies>(state.text.tokenizer->vocab_size());
      DocumentReader documents(options.corpus_path, "none");
      std::vector<Sequence> sequences;
      std::int64_t counted = 0;
      while ((options.max_sequences == 0 || counted < options.max_sequences) &&
             state.read_document(documents, sequences, state.frequencies.get(),
                                 options.max_sequences > 0 ? options.max_sequences - counted : 0)) {
        counted += static_cast<std::int64_t>(sequences.size());
      }
    }
    state.corpus_summary.idf_documents = state.frequencies->documents();
    state.idf_table = torch::tensor(state.frequencies->idf_table(), torch::kFloat);
  }
};

}  // namespace

std::unique_ptr<Pass> make_document_frequency_pass() { return std::make_unique<DocumentFrequencyPass>(); }

}  // namespace headscan
