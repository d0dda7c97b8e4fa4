#pragma once
// The start of a run (analysis.cpp): the model loaded with its tokenizer and text setup, the corpus
// opened and the model's shape read off its first sequence, the warning that attention the model
// materialises grows with T², and how the run's attention was computed, for heads.json.

#include <c10/core/Device.h>

#include "reports/heads_json.h"

namespace headscan {

struct RunState;

// Loads the model on `device` (with --device auto, where it can run), its tokenizer, BOS and
// window shape, and the punctuation table on the model's device.
void load_model_and_text(RunState& state, const c10::Device& device);

// The attention layers headscan's op computes in row blocks; the rest the model materialises whole.
AttentionRunSummary attention_summary(const RunState& state);

// A warning when the model materialises attention whose memory grows with T² at this window.
void warn_of_materialised_attention(RunState& state);

// Opens the corpus and reads its first document, on which the model's shape is detected. Throws
// InputError for a corpus with no token.
void open_corpus(RunState& state);

}  // namespace headscan
