#include "analyzer/examples.h"

#include <algorithm>

#include <fmt/format.h>
#include <torch/torch.h>

namespace headscan {

void ExampleChooser::offer(const Sequence& sequence) {
  if (chosen_.size() >= ExampleSequence::kMaxExamples) return;
  Sequence example = sequence;
  const std::size_t length = std::min(example.ids.size(), ExampleSequence::kMaxExampleTokens);
  example.ids.resize(length);
  example.special.resize(length);
  chosen_.push_back(std::move(example));
}

std::vector<ExampleSequence> capture_examples(InstrumentedModel& model, const std::vector<Sequence>& sequences,
                                              const Tokenizer& tokenizer, const ModelShape& shape,
                                              const std::string& source) {
  std::vector<ExampleSequence> examples;
  for (const Sequence& sequence : sequences) {
    ExampleSequence example;
    example.source = fmt::format("{} {}", source, sequence.line_number);
    for (std::size_t t = 0; t < sequence.ids.size(); ++t) {
      example.tokens.push_back(tokenizer.id_to_piece(sequence.ids[t]));
      example.special.push_back(sequence.special[t] != 0);
    }
    example.layers = shape.layers;
    example.heads = shape.heads;
    const auto length = static_cast<std::int64_t>(sequence.ids.size());
    example.attention.resize(static_cast<std::size_t>(shape.layers * shape.heads * length * length));
    const at::Tensor ids = torch::tensor(sequence.ids, torch::kInt64).unsqueeze(0);
    const at::Tensor mask = torch::ones_like(ids);
    model.forward(ids, &mask, [&](int layer, const at::Tensor& attention) {
      if (layer >= shape.layers || attention.size(1) != shape.heads) return;
      const at::Tensor weights = attention[0].to(torch::kFloat).contiguous();  // [H, T, T]
      std::copy_n(weights.data_ptr<float>(), weights.numel(),
                  example.attention.begin() + static_cast<std::ptrdiff_t>(layer) * weights.numel());
    });
    examples.push_back(std::move(example));
  }
  return examples;
}

}  // namespace headscan
