#include "analyzer/run/examples.h"

#include <algorithm>

#include <fmt/format.h>
#include <torch/torch.h>

namespace headscan {

void ExampleChooser::offer(Sequence& sequence) {
  if (chosen_.size() >= ExampleSequence::kMaxExamples) return;
  sequence.example = static_cast<int>(chosen_.size());
  Sequence example = sequence;
  const std::size_t length = std::min(example.ids.size(), ExampleSequence::kMaxExampleTokens);
  // A cut keeps the first tokens, as a causal model's recorded attention does; the suffix goes first.
  const std::size_t cut = example.ids.size() - length;
  example.suffix_length = example.suffix_length > cut ? example.suffix_length - cut : 0;
  example.ids.resize(length);
  example.special.resize(length);
  chosen_.push_back(std::move(example));
}

ExampleSequence make_example(const Sequence& sequence, const Tokenizer& tokenizer, const ModelShape& shape,
                             const std::string& source) {
  ExampleSequence example;
  example.source = fmt::format("{} {}", source, sequence.line_number);
  for (std::size_t t = 0; t < sequence.ids.size(); ++t) {
    example.tokens.push_back(tokenizer.id_to_piece(sequence.ids[t]));
    example.special.push_back(sequence.special[t] != 0);
  }
  example.layers = shape.layers;
  example.heads = shape.heads;
  const std::size_t length = sequence.ids.size();
  example.attention.assign(static_cast<std::size_t>(shape.layers * shape.heads) * length * length, 0.0f);
  return example;
}

void record_example_attention(ExampleSequence& example, int layer, const at::Tensor& attention,
                              std::int64_t first_row) {
  TORCH_CHECK(attention.dim() == 3, "attention must be [H,Q,T], got ", attention.sizes());
  const auto length = static_cast<std::int64_t>(example.tokens.size());
  if (layer < 0 || layer >= example.layers || attention.size(0) != example.heads || attention.size(2) < length) return;
  // The block's rows that are the example's: first_row .. min(first_row + Q, length) − 1.
  const std::int64_t rows = std::min(attention.size(1), length - first_row);
  if (rows <= 0) return;
  const at::Tensor corner =
      attention.slice(/*dim=*/1, 0, rows).slice(/*dim=*/2, 0, length).to(torch::kCPU, torch::kFloat).contiguous();  // [H, rows, T]
  const float* data = corner.data_ptr<float>();
  const auto width = static_cast<std::size_t>(length);
  for (std::int64_t head = 0; head < example.heads; ++head) {
    const std::size_t map = (static_cast<std::size_t>(layer) * static_cast<std::size_t>(example.heads) +
                             static_cast<std::size_t>(head)) * width * width;
    std::copy_n(data + static_cast<std::size_t>(head * rows) * width, static_cast<std::size_t>(rows) * width,
                example.attention.begin() + static_cast<std::ptrdiff_t>(map + static_cast<std::size_t>(first_row) * width));
  }
}

std::vector<ExampleSequence> capture_examples(InstrumentedModel& model, const std::vector<Sequence>& sequences,
                                              const Tokenizer& tokenizer, const ModelShape& shape,
                                              const std::string& source) {
  std::vector<ExampleSequence> examples;
  for (const Sequence& sequence : sequences) {
    ExampleSequence example = make_example(sequence, tokenizer, shape, source);
    // A model with a min_length takes the sequence padded to it (padding hidden by the mask, or
    // after every real token of a causal model); the example keeps its own tokens' corner.
    std::vector<std::int64_t> padded = sequence.ids;
    const auto shortest = static_cast<std::size_t>(model.metadata().min_length.value_or(0));
    if (!padded.empty() && padded.size() < shortest) padded.resize(shortest, padded.back());
    const at::Tensor ids = torch::tensor(padded, torch::kInt64).unsqueeze(0);
    at::Tensor mask = torch::ones_like(ids);
    mask.slice(/*dim=*/1, static_cast<std::int64_t>(sequence.ids.size())).zero_();
    model.forward(ids, &mask, [&](int layer, const at::Tensor& attention, std::int64_t first_row) {
      if (layer < shape.layers && attention.size(1) == shape.heads) {
        record_example_attention(example, layer, attention[0], first_row);
      }
    });
    examples.push_back(std::move(example));
  }
  return examples;
}

}  // namespace headscan
