#pragma once
// Whether the model returns logits over the tokenizer's vocabulary ([batch, tokens, V] with V at
// least the tokenizer's tokens, alone or first in a tuple), which repeat_loss, retrieval and
// --ablation need. A model without a language-model head (a sentence-transformers BertModel)
// returns its hidden states instead: every attention score is measured, those three are not.

#include <cstdint>
#include <string>

#include "analyzer/model/model_shape.h"

namespace headscan {

bool returns_logits(const ModelShape& shape, std::int64_t vocab_size);

// What the model returns, for messages: "[batch, tokens, 384] (hidden states: no language-model
// head)", "[batch, tokens, 64]", or "no [batch, tokens, vocabulary] tensor".
std::string output_description(const ModelShape& shape, std::int64_t vocab_size);

// Empty when returns_logits(); else, in a sentence, what the report lacks and why (heads.json's
// model.lm_head_note and the report's index).
std::string missing_logits_note(const ModelShape& shape, std::int64_t vocab_size);

}  // namespace headscan
