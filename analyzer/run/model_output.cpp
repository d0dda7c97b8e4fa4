#include "analyzer/run/model_output.h"

#include <algorithm>

#include <fmt/format.h>

namespace headscan {

bool returns_logits(const ModelShape& shape, std::int64_t vocab_size) {
  return shape.logits_width > 0 && shape.declared_logits.value_or(shape.logits_width >= vocab_size);
}

std::int64_t model_vocabulary(const ModelShape& shape, std::int64_t vocab_size) {
  return returns_logits(shape, vocab_size) ? std::min(shape.logits_width, vocab_size) : vocab_size;
}

std::string output_description(const ModelShape& shape, std::int64_t vocab_size) {
  if (shape.logits_width == 0) return "no [batch, tokens, vocabulary] tensor";
  if (returns_logits(shape, vocab_size)) return fmt::format("[batch, tokens, {}]", shape.logits_width);
  return fmt::format("[batch, tokens, {}] (hidden states: no language-model head)", shape.logits_width);
}

std::string missing_logits_note(const ModelShape& shape, std::int64_t vocab_size) {
  if (returns_logits(shape, vocab_size)) return {};
  const std::string output = shape.logits_width > 0
                                 ? fmt::format("{} numbers per token (hidden states: the model has no language-model "
                                               "head)",
                                               shape.logits_width)
                                 : std::string("no [batch, tokens, vocabulary] tensor (alone or first in a tuple)");
  // Retrieval is measured on causal models only, whatever they return.
  const std::string retrieval =
      shape.causal ? ", no retrieval heads (copy events are the model's predictions of the needle)" : "";
  return fmt::format("the model's output is {}, not logits over the tokenizer's {} tokens, so there is no repeat_loss "
                     "(the loss on the induction probes' repeats){}, and --ablation is refused (it measures the {} "
                     "loss); every attention score is measured. Export the model with its {} head for these",
                     output, vocab_size, retrieval, shape.causal ? "next-token" : "masked-LM",
                     shape.causal ? "language-model" : "masked-LM");
}

}  // namespace headscan
