#pragma once
// headscan.json, the metadata file inside a model archive: {"name", "bos_token", "max_length",
// "causal", "n_kv_heads", "step", "layers", "min_length", "checked_length", "logits"}, every field
// optional.
// Read without LibTorch (and fuzzed so: tests/fuzz/fuzz_headscan_json.cpp). The exporters check
// what they write as this reads it (analyzer/python/headscan/_export/headscan_json.py; both agree on
// tests/fixtures/headscan_json_cases.json).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "analyzer/model/model_layers.h"

namespace headscan {

// Bounds on headscan.json (README, "Fuzzing and limits").
constexpr std::size_t kMaxMetadataBytes = std::size_t{1} << 20;    // 1 MiB; real files hold a few lines
constexpr std::int64_t kMaxMetadataLength = std::int64_t{1} << 20;  // the lengths, as --max-length
constexpr int kMaxMetadataKvHeads = 4096;                           // n_kv_heads
constexpr std::int64_t kMaxMetadataStep = std::int64_t{1} << 53;    // step, exact in a JSON number
constexpr int kMaxMetadataLayers = 4096;                            // entries of layers

struct ModelMetadata {
  std::string name;
  std::string bos_token;
  std::optional<std::int64_t> max_length;  // 2 … kMaxMetadataLength
  // The shortest sequence the model takes (an exported program whose export raised the length's
  // lower bound): shorter batches are padded to it. 2 … kMaxMetadataLength.
  std::optional<std::int64_t> min_length;
  // The longest sequence `headscan export` checked the program against the model at (its length
  // checks stop at 4,096 tokens): a run may warn beyond it. 2 … kMaxMetadataLength.
  std::optional<std::int64_t> checked_length;
  std::optional<bool> causal;
  // Whether the model's output is logits, as its exporter told from the model's language-model
  // head (headscan export, scripts/export_hf.py): then the output's width is the model's vocabulary,
  // which a tokenizer with added tokens may exceed. Absent: told from the width against the
  // tokenizer's vocabulary.
  std::optional<bool> logits;
  std::optional<int> n_kv_heads;           // 1 … kMaxMetadataKvHeads
  std::optional<std::int64_t> step;        // a checkpoint's training step, 0 … kMaxMetadataStep
  // "layers": [{"index", "path", "kind"}, …], every layer of the model (model_layers.h), written by
  // `headscan export`; attention_layers lists those of kind "attention", in order.
  std::optional<LayerNumbering> layers;
};

// Parses headscan.json; empty text gives the defaults. Throws InputError, naming `origin`, the
// field and what it holds, when the text is larger than kMaxMetadataBytes, is not a JSON object,
// nests deeper than kMaxJsonDepth, or a field has the wrong type or is out of its range.
ModelMetadata parse_model_metadata(const std::string& text, const std::string& origin);

}  // namespace headscan
