#pragma once
// The few example sequences whose full attention the reports draw.

#include <string>
#include <vector>

#include "analyzer/model.h"
#include "analyzer/sequences.h"
#include "heads/classifier.h"
#include "reports/report_writer.h"

namespace headscan {

// Keeps the first ExampleSequence::kMaxExamples sequences offered, cut to kMaxExampleTokens.
class ExampleChooser {
 public:
  void offer(const Sequence& sequence);
  const std::vector<Sequence>& chosen() const { return chosen_; }

 private:
  std::vector<Sequence> chosen_;
};

// Runs each sequence alone and keeps the attention of every layer and head. `source` names them
// ("corpus line", "probe").
std::vector<ExampleSequence> capture_examples(InstrumentedModel& model, const std::vector<Sequence>& sequences,
                                              const Tokenizer& tokenizer, const ModelShape& shape,
                                              const std::string& source);

}  // namespace headscan
