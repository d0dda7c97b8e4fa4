#include "analyzer/run/pass.h"

namespace headscan {

std::vector<std::unique_ptr<Pass>> make_passes(const AnalysisOptions& options) {
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(make_document_frequency_pass());
  passes.push_back(make_corpus_pass());
  passes.push_back(make_probe_pass());
  return passes;
}

}  // namespace headscan
