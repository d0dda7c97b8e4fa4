#pragma once
// Whether the model returns logits ([batch, tokens, V], alone or first in a tuple), which
// repeat_loss, retrieval and --ablation need: as headscan.json's "logits" says (the exporter told it
// from the model's language-model head, so V may be below the tokenizer's vocabulary when the
// tokenizer holds added tokens beyond the embedding), else when V is at least the tokenizer's
// tokens. A model without a language-model head (a sentence-transformers BertModel) returns its
// hidden states instead: every attention score is measured, those three are not.

#include <cstdint>
#include <string>

#include "analyzer/model/model_shape.h"

namespace headscan {

bool returns_logits(const ModelShape& shape, std::int64_t vocab_size);

// The ids the model scores: its logits' width where it returns logits (at most the tokenizer's
// vocabulary), else the tokenizer's vocabulary. The probes and needles draw their tokens below it.
std::int64_t model_vocabulary(const ModelShape& shape, std::int64_t vocab_size);

// What the model returns, for messages: "[batch, tokens, 384] (hidden states: no language-model
// head)", "[batch, tokens, 64]", or "no [batch, tokens, vocabulary] tensor".
std::string output_description(const ModelShape& shape, std::int64_t vocab_size);

// Empty when returns_logits(); else, in a sentence, what the report lacks and why (heads.json's
// model.lm_head_note and the report's index).
std::string missing_logits_note(const ModelShape& shape, std::int64_t vocab_size);

}  // namespace headscan
