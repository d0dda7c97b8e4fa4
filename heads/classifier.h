#pragma once
// The interface every head type implements. A classifier accumulates statistics (sums and
// counts) over the attention of every layer and head, batch by batch, and turns them into scores
// and labels at the end. Statistics merge, so shards of a corpus can be analysed separately.
//
// Shapes: attention arrives in row blocks [B, H, Q, T] float32 (query rows first_row ..
// first_row + Q − 1, all T key columns, rows sum to 1 over the keys each query can see;
// heads/row_block.h); per-batch context tensors are [B, T], on the attention's device.
// Statistics are tensor operations on that device; only per-head sums leave it.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyzer/model/model_shape.h"
#include "heads/head_type.h"

namespace at {
class Tensor;
}

namespace headscan {

struct SequenceWords;
class RowSummaryCache;
class DeviceSums;

// Where a batch comes from: the user's corpus or headscan's synthetic probe sequences. Each
// classifier reads the batches of one source; a pass (analyzer/run/passes/pass.h) says which source
// its batches are, or that classifiers do not see them. The needle probes
// (analyzer/run/sequences/needles.h) are a source of their own: retrieval heads read them.
enum class BatchSource { corpus, probe, needle };

struct BatchContext {
  const at::Tensor& token_ids;  // [B, T] int64
  const at::Tensor& valid;      // [B, T] bool: false on padding; the keys a query may see
  // [B, T] bool: the rows that count as queries in every score: valid, and not the template's
  // suffix ([SEP], </s>), which is a key only (Clark et al. 2019 study attention to [SEP], not
  // from it). Content queries are the queries at i >= 1. Equal to `valid` without a suffix.
  const at::Tensor& queries;
  const at::Tensor& special;    // [B, T] bool: BOS, the suffix and the tokenizer's special tokens
  const at::Tensor& idf;        // [B, T] float: idf of each token, -inf on special tokens and padding
  bool causal = true;           // queries see only keys j <= i
  bool has_bos = true;          // position 0 of every sequence is BOS
  BatchSource source = BatchSource::corpus;
  std::int64_t batch_index = 0; // counts batches of one source, so per-batch work is done once
  // Per sequence: its words and dependency arcs (analyzer/corpus/sequence_words.h), null entries for
  // sequences without a parse; null when no sequence of the batch has one.
  const std::vector<const SequenceWords*>* words = nullptr;
  // Per-row statistics of the current layer shared by the classifiers (heads/row_summary.h);
  // null: each classifier computes them itself.
  RowSummaryCache* rows = nullptr;
  // Where the batch's per-head sums wait to leave the attention's device together
  // (heads/device_sums.h); null: each statistic is brought to the host at once.
  DeviceSums* sums = nullptr;
  // [B, T] bool: the tokens whose text is only punctuation (analyzer/tokenizers/piece_text.h); null
  // when the run knows none.
  const at::Tensor* punctuation = nullptr;
  // Needle probes: [B, T] int64, for each query that is a copy event the position of the needle
  // token the model copies there, -1 elsewhere; null in other batches.
  const at::Tensor* needle_targets = nullptr;
  // The attention observe() receives is a row block [B, H, Q, T]: the queries first_row ..
  // first_row + Q − 1 over all T keys (AttentionCallback, analyzer/model/model.h). The per-batch
  // tensors above stay [B, T], indexed by absolute position.
  std::int64_t first_row = 0;
};

// What a classifier concludes about one head.
struct HeadVerdict {
  nlohmann::ordered_json& scores;    // the head's "scores" object in heads.json
  std::vector<std::string>& labels;  // labels the head earns, e.g. "previous-token"
};

class HeadClassifier {
 public:
  virtual ~HeadClassifier() = default;

  // Its scores, label, default thresholds, meaning, source and colour (heads/head_type.h).
  virtual HeadType type() const = 0;
  // The key of its score in heads.json, e.g. "previous_token".
  std::string name() const { return type().name(); }

  // Capabilities, asked rather than assumed.
  // The batches it reads: the corpus or the probe sequences.
  virtual BatchSource source() const { return BatchSource::corpus; }
  // Whether it needs dependency arcs (BatchContext::words); without parses it reports nothing.
  virtual bool wants_parses() const { return false; }

  // Called once before the first observe().
  virtual void begin(const ModelShape& shape) = 0;
  // The run's thresholds, before begin(): a type whose statistics take a parameter (streaming's
  // sink and window) reads it here. The parameters are named like thresholds, so shards agree on
  // them and heads.json records them.
  virtual void configure(const Thresholds& /*thresholds*/) {}
  // One row block of one layer's attention for one batch: [B, H, Q, T], rows from
  // context.first_row. A layer's blocks arrive in row order and cover all T rows; every score must
  // come out the same whatever the blocks (tests/test_row_blocks.cpp).
  virtual void observe(int layer, const at::Tensor& attention, const BatchContext& context) = 0;

  // Mergeable statistics: save() writes them, merge() adds statistics saved by another run of
  // the same classifier on the same model (a shard).
  virtual nlohmann::json save() const = 0;
  virtual void merge(const nlohmann::json& saved) = 0;

  // Scores and labels of one head from the accumulated statistics.
  virtual void finalize(int layer, int head, const Thresholds& thresholds, HeadVerdict& verdict) const = 0;
};

}  // namespace headscan
