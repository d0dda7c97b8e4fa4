#pragma once
// The few example sequences whose full attention the reports draw.

#include <string>
#include <vector>

#include "analyzer/model/model.h"
#include "analyzer/model/model_shape.h"
#include "analyzer/run/sequences/sequences.h"
#include "reports/report_writer.h"

namespace headscan {

// Keeps the first ExampleSequence::kMaxExamples sequences offered, cut to kMaxExampleTokens, and
// marks each chosen sequence with its index (Sequence::example).
class ExampleChooser {
 public:
  void offer(Sequence& sequence);
  const std::vector<Sequence>& chosen() const { return chosen_; }

 private:
  std::vector<Sequence> chosen_;
};

// An example with its tokens and room for the attention of every layer and head (zeros).
ExampleSequence make_example(const Sequence& sequence, const Tokenizer& tokenizer, const ModelShape& shape,
                             const std::string& source);

// Copies one row block of one layer's attention of the example's sequence into it. `attention` is
// [H, Q, T'], rows first_row .. of the whole sequence (T' >= the example's length): in a causal model
// its top-left corner is exactly the attention of the example's prefix, so examples are recorded in
// the corpus pass at no extra cost.
void record_example_attention(ExampleSequence& example, int layer, const at::Tensor& attention,
                              std::int64_t first_row = 0);

// Runs each sequence alone and keeps the attention of every layer and head. `source` names them
// ("corpus line", "probe").
std::vector<ExampleSequence> capture_examples(InstrumentedModel& model, const std::vector<Sequence>& sequences,
                                              const Tokenizer& tokenizer, const ModelShape& shape,
                                              const std::string& source);

}  // namespace headscan
