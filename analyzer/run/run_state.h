#pragma once
// What the passes of one run share (analyzer/run/passes/pass.h): the instrumented model, the
// tokenizer and sequence shape, the classifiers, the corpus being read, the summaries that become
// heads.json and the example sequences the report draws.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analyzer/corpus/document_frequencies.h"
#include "analyzer/corpus/documents.h"
#include "analyzer/model/model.h"
#include "analyzer/model/model_shape.h"
#include "analyzer/run/analysis.h"
#include "analyzer/run/examples.h"
#include "analyzer/run/passes/ablation.h"
#include "analyzer/run/sequences/needles.h"
#include "analyzer/run/sequences/probes.h"
#include "analyzer/run/sequences/sequence_reader.h"
#include "analyzer/run/sequences/sequences.h"
#include "analyzer/run/sequences/text_setup.h"
#include "heads/classifier_set.h"
#include "reports/heads_json.h"

namespace headscan {

struct RunState {
  explicit RunState(const AnalysisOptions& run_options) : options(run_options) {}

  const AnalysisOptions& options;
  std::unique_ptr<InstrumentedModel> model;
  TextSetup text;
  std::int64_t pad_id = 0;  // right padding of batches (BOS, else id 0): never a real query's key
  ModelShape shape;
  ClassifierSet classifiers;

  // The corpus, opened before the passes; the first document's sequences were read to find the
  // model's shape and wait in first_sequences for the corpus pass.
  std::unique_ptr<DocumentReader> reader;
  std::unique_ptr<SequenceReader> sequences;  // reads `reader`
  std::vector<Sequence> first_sequences;
  // Document frequencies for rare-word heads (the corpus's or --idf's) and their idf per id.
  std::unique_ptr<DocumentFrequencies> frequencies;
  at::Tensor idf_table;  // [V] float
  // [V] bool on the model's device: the ids whose text is only punctuation (piece_text.h).
  at::Tensor punctuation_table;
  // The needle pass's current batch (analyzer/run/sequences/needles.h): [B, T] int64 on the model's
  // device, the key each copy event copies, -1 elsewhere; undefined outside that pass.
  at::Tensor needle_targets;

  Thresholds thresholds;  // the defaults with --threshold's overrides
  ProbeSet probes;        // made by the probe pass
  NeedleSummary needle_summary;  // what the needle pass found
  // The needle pass's probes, per length (empty when it made none), for the KV-cache plan's check.
  std::vector<NeedleSet> needle_sets;

  // --ablation: the objective (chosen before the corpus pass), the ablation set (collected by the
  // corpus pass) and what the causal passes found.
  std::optional<AblationObjective> objective;
  std::vector<AblationItem> ablation_items;
  AblationFindings ablation;

  ModelSummary model_summary;
  CorpusSummary corpus_summary;
  double corpus_seconds = 0;  // the corpus pass's wall time: its speed estimates the probes' time
  ProbeSummary probe_summary;
  std::vector<std::string> warnings;
  // Whether a sequence longer than headscan.json's checked_length (the longest length headscan
  // export compared the program with the model at) has run: warned once.
  bool beyond_checked_length = false;

  // The report's example sequences. Causal models record their attention in the passes (the
  // top-left corner of a sequence's attention is its prefix's); other models run them again.
  ExampleChooser corpus_example_chooser;
  std::vector<Sequence> probe_example_sequences;
  std::vector<Sequence> example_prompts;  // --examples
  bool record_examples = false;
  std::vector<ExampleSequence> corpus_examples;
  std::vector<ExampleSequence> probe_examples;

  // Document frequencies of the corpus at `path`, as the idf pass counts them: every document
  // (line or sentence), or those of the first `max_sequences` sequences when it is not 0.
  // Adds the reader's warning about an absurd expansion (TextLineReader::expansion_warning).
  std::unique_ptr<DocumentFrequencies> count_frequencies(const std::string& path, std::int64_t max_sequences);

  // Adds to `warnings` what `documents` found suspicious about its file (once per run).
  void note_expansion(const DocumentReader& documents);

  // --examples FILE: its lines as sequences (the first window of each, BOS included), at most
  // ExampleSequence::kMaxExamples of them, for the report's example sequences. Throws InputError
  // when the file cannot be read or no line gives a token. Adds a warning for lines left out.
  std::vector<Sequence> read_examples();

  // Whether batches may be right-padded: the model takes a mask, or is causal (no real query sees
  // the padding after it).
  bool pads() const;
  // Warns, once per run, when `batch` holds a sequence longer than the model's checked_length.
  void note_checked_length(const std::vector<Sequence>& batch);
  // InputError when `batch` holds an id the model's logits do not score (headscan.json's "logits"
  // with a tokenizer of more tokens than the model's vocabulary), before the model runs.
  void refuse_ids_beyond_model(const std::vector<Sequence>& batch) const;
  // The fewest columns a batch may have: the model's min_length (0 when it has none). Throws
  // InputError when it has one and padding would be visible to real tokens (pads() is false).
  std::int64_t min_columns() const;
  // The columns of `batch`'s tensors: its longest sequence, at least min_columns().
  std::int64_t columns(const std::vector<Sequence>& batch) const;

  // The probe sequences in the batches every pass runs them in.
  std::vector<std::vector<Sequence>> probe_batches() const;

  // One forward call over `batch`. Each layer's attention goes to the classifiers that read
  // `feeds` (none when nullopt) and, when recording, into `examples` (Sequence::example indexes
  // it). Throws InputError when the model breaks the shape seen on the first sequence.
  // `target` replaces the run's classifiers (a causal pass's own set), and `scales` multiplies
  // heads' attention inside the model (HeadScales).
  // `edit` replaces layers' attention inside the model (AttentionEdit).
  // `logits_rows` (int64 [K]) asks for the logits at those rows only, [B, K, V]
  // (InstrumentedModel::forward), and `watch` sees every row block too, after the classifiers.
  ForwardOutput forward(const std::vector<Sequence>& batch, std::optional<BatchSource> feeds,
                        std::int64_t batch_index, std::vector<ExampleSequence>* examples,
                        ClassifierSet* target = nullptr, const HeadScales* scales = nullptr,
                        const AttentionEdit* edit = nullptr, const at::Tensor* logits_rows = nullptr,
                        const AttentionCallback* watch = nullptr);
  // forward() for a pass that reads the attention only, not the model's output (the corpus pass):
  // the forward call stops once the last attention layer's last block has been read, so what the
  // model computes after it (the last layer's MLP, the final norm, the vocabulary projection: half
  // the work of a GPT-2-shaped model) is never run.
  void observe(const std::vector<Sequence>& batch, BatchSource feeds, std::int64_t batch_index,
               std::vector<ExampleSequence>* examples, ClassifierSet* target = nullptr);
  // Feeds `target` the row blocks of `batch`'s attention that `blocks` hands to the callback it is
  // given, in a forward call's order (AttentionCallback), as observe() feeds those of the model:
  // attention kept from an earlier call, without running the model.
  void replay(const std::vector<Sequence>& batch, BatchSource feeds, std::int64_t batch_index, ClassifierSet& target,
              const std::function<void(const AttentionCallback&)>& blocks);

 private:
  // How forward_call runs: the whole forward, its attention only (observe), or attention replayed.
  struct CallMode {
    bool stop_after_attention = false;
    const at::Tensor* logits_rows = nullptr;
    const AttentionCallback* watch = nullptr;
    const std::function<void(const AttentionCallback&)>* replay = nullptr;
  };
  ForwardOutput forward_call(const std::vector<Sequence>& batch, std::optional<BatchSource> feeds,
                             std::int64_t batch_index, std::vector<ExampleSequence>* examples, ClassifierSet* target,
                             const HeadScales* scales, const AttentionEdit* edit, const CallMode& mode);
};

}  // namespace headscan
