#include "analyzer/run/run_state.h"

#include <algorithm>
#include <exception>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/json_limits.h"
#include "analyzer/run/model_output.h"
#include "analyzer/run/sequences/batch_tensors.h"
#include "analyzer/run/sequences/deferred_words.h"

namespace headscan {
namespace {

// Thrown by the attention callback of RunState::observe after the last attention layer's last
// block: it unwinds the model's forward (the capture hands it back with its type) to forward_call.
struct ForwardStopped : std::exception {
  const char* what() const noexcept override { return "the forward stopped after its last attention layer"; }
};

// Counts a long document into `counted` part by part (kLinePartBytes), without holding its tokens:
// the parts of the text it holds, then those the reader gives. Returns whether it had any token.
bool count_in_parts(const Tokenizer& tokenizer, DocumentReader& documents, const Document& document,
                    DocumentFrequencies& counted) {
  bool any = false;
  std::string held = document.text;
  for (bool more = true; more; more = document.more && documents.next_part(held)) {
    for (std::size_t begin = 0; begin < held.size();) {
      const std::size_t end = line_part_end(held, begin);
      const std::vector<Token> part = tokenizer.encode(std::string_view(held).substr(begin, end - begin));
      any = any || !part.empty();
      counted.add_tokens(part, tokenizer);
      begin = end;
    }
  }
  return any;
}

}  // namespace

std::vector<std::vector<Sequence>> RunState::probe_batches() const {
  Batcher batcher(static_cast<std::size_t>(options.batch_size), pads(), probes.sequences.size());
  for (const Sequence& probe : probes.sequences) batcher.add(probe);
  return batcher.flush();
}

std::unique_ptr<DocumentFrequencies> RunState::count_frequencies(const std::string& path, std::int64_t max_sequences) {
  auto counts = std::make_unique<DocumentFrequencies>(text.tokenizer->vocab_size());
  DocumentReader documents(path, "none", options.text_field);
  if (max_sequences == 0) {
    // Every document, as SequenceReader counts them (one with no token is none), without making
    // sequences: a long document is counted part by part and its tokens are not held.
    const Tokenizer& tokenizer = *text.tokenizer;
    Document document;
    while (documents.next(document)) {
      if (!document.more && document.text.size() <= kLongLineBytes) {
        const std::vector<Token> tokens = tokenizer.encode(document.text);
        if (!tokens.empty()) counts->add_document(tokens, tokenizer);
      } else if (count_in_parts(tokenizer, documents, document, *counts)) {
        counts->end_document();
      }
    }
  } else {
    SequenceReader windows(documents, *text.tokenizer, text.shape, options.check_interrupt);
    std::vector<Sequence> read;
    std::int64_t counted = 0;
    while (counted < max_sequences && windows.next(read, counts.get(), max_sequences - counted)) {
      counted += static_cast<std::int64_t>(read.size());
    }
  }
  note_expansion(documents);
  return counts;
}

void RunState::note_expansion(const DocumentReader& documents) {
  const std::string warning = documents.expansion_warning();
  if (!warning.empty() && std::find(warnings.begin(), warnings.end(), warning) == warnings.end()) {
    warnings.push_back(warning);
  }
}

std::vector<Sequence> RunState::read_examples() {
  // Prompts are few and shown whole: binary data anywhere is refused.
  reject_nul_bytes(options.examples_path, "--examples", "expected a UTF-8 text file with one prompt per line");
  DocumentReader documents(options.examples_path, "none");
  if (std::string_view(documents.format()) != "text") {
    throw InputError(fmt::format("--examples {}: expected a text file with one prompt per line, found a {} file; "
                                 "give the prompts as plain text",
                                 options.examples_path, documents.format()));
  }
  ExampleChooser chooser;
  SequenceReader windows(documents, *text.tokenizer, text.shape, options.check_interrupt);
  std::vector<Sequence> prompt;
  std::size_t prompts = 0;
  while (windows.next(prompt, nullptr, 1)) {
    ++prompts;
    if (prompt.front().ids.size() > ExampleSequence::kMaxExampleTokens) {
      warnings.push_back(fmt::format("--examples {}: line {} is cut to its first {} tokens in the report",
                                     options.examples_path, prompt.front().line_number,
                                     ExampleSequence::kMaxExampleTokens));
    }
    chooser.offer(prompt.front());
  }
  if (prompts == 0) {
    throw InputError(fmt::format("--examples {}: no line gives any token; write one prompt per line",
                                 options.examples_path));
  }
  if (prompts > ExampleSequence::kMaxExamples) {
    warnings.push_back(fmt::format("--examples {}: the report shows the first {} of its {} prompts",
                                   options.examples_path, ExampleSequence::kMaxExamples, prompts));
  }
  return chooser.chosen();
}

void RunState::note_checked_length(const std::vector<Sequence>& batch) {
  const std::optional<std::int64_t> checked = model->metadata().checked_length;
  if (!checked || beyond_checked_length) return;
  std::size_t longest = 0;
  for (const Sequence& sequence : batch) longest = std::max(longest, sequence.ids.size());
  if (static_cast<std::int64_t>(longest) <= *checked) return;
  beyond_checked_length = true;
  warnings.push_back(fmt::format("{}: a sequence of {} tokens ran, but headscan export compared the program with "
                                 "the model up to {} tokens only (headscan.json checked_length): a branch of the "
                                 "model's Python on longer lengths (a RoPE scaling that changes past a length, a "
                                 "sliding window) would not have been seen; lower --max-length to {}, or check the "
                                 "model at that length",
                                 model->path(), longest, *checked, *checked));
}

void RunState::refuse_ids_beyond_model(const std::vector<Sequence>& batch) const {
  const std::int64_t vocab_size = text.tokenizer->vocab_size();
  if (shape.logits_width == 0 || !shape.declared_logits || !returns_logits(shape, vocab_size)) return;
  const std::int64_t width = shape.logits_width;
  if (width >= vocab_size) return;  // every id the tokenizer gives is the model's
  for (const Sequence& sequence : batch) {
    for (const std::int64_t id : sequence.ids) {
      if (id < width) continue;
      throw InputError(fmt::format("token id {} ({}) is beyond the model's vocabulary: its logits score {} tokens, "
                                   "the tokenizer has {} (added tokens the model was not trained with); remove "
                                   "that token from the text, or give the model's own tokenizer with --tokenizer",
                                   id, quote_json(text.tokenizer->id_to_piece(id)), width, vocab_size));
    }
  }
}

bool RunState::pads() const { return model->takes_attention_mask() || shape.causal; }

std::int64_t RunState::min_columns() const {
  const std::optional<std::int64_t> shortest = model->metadata().min_length;
  if (!shortest) return 0;
  if (!pads()) {
    throw InputError(fmt::format("{}: the model takes no sequence shorter than {} tokens (headscan.json min_length), "
                                 "and shorter ones cannot be padded to it: it takes no attention mask and is not "
                                 "causal; export it with an attention mask",
                                 model->path(), *shortest));
  }
  return *shortest;
}

std::int64_t RunState::columns(const std::vector<Sequence>& batch) const {
  std::int64_t columns = min_columns();
  for (const Sequence& sequence : batch) columns = std::max(columns, static_cast<std::int64_t>(sequence.ids.size()));
  return columns;
}

ForwardOutput RunState::forward(const std::vector<Sequence>& batch, std::optional<BatchSource> feeds,
                                std::int64_t batch_index, std::vector<ExampleSequence>* examples,
                                ClassifierSet* target, const HeadScales* scales, const AttentionEdit* edit,
                                const at::Tensor* logits_rows, const AttentionCallback* watch) {
  CallMode mode;
  mode.logits_rows = logits_rows;
  mode.watch = watch;
  return forward_call(batch, feeds, batch_index, examples, target, scales, edit, mode);
}

void RunState::observe(const std::vector<Sequence>& batch, BatchSource feeds, std::int64_t batch_index,
                       std::vector<ExampleSequence>* examples, ClassifierSet* target) {
  CallMode mode;
  mode.stop_after_attention = true;
  forward_call(batch, feeds, batch_index, examples, target, nullptr, nullptr, mode);
}

void RunState::replay(const std::vector<Sequence>& batch, BatchSource feeds, std::int64_t batch_index,
                      ClassifierSet& target, const std::function<void(const AttentionCallback&)>& blocks) {
  CallMode mode;
  mode.replay = &blocks;
  forward_call(batch, feeds, batch_index, nullptr, &target, nullptr, nullptr, mode);
}

ForwardOutput RunState::forward_call(const std::vector<Sequence>& batch, std::optional<BatchSource> feeds,
                                     std::int64_t batch_index, std::vector<ExampleSequence>* examples,
                                     ClassifierSet* target, const HeadScales* scales, const AttentionEdit* edit,
                                     const CallMode& mode) {
  if (options.check_interrupt) options.check_interrupt();
  note_checked_length(batch);
  refuse_ids_beyond_model(batch);
  ClassifierSet& observers = target != nullptr ? *target : classifiers;
  const BatchTensors tensors = to_tensors(batch, pad_id, idf_table, model->device(), min_columns());
  std::vector<const SequenceWords*> words;
  bool any_words = false;
  for (const Sequence& sequence : batch) {
    words.push_back(sequence_words(sequence));  // waits for the parses still running
    any_words = any_words || words.back() != nullptr;
  }
  at::Tensor punctuation;
  if (punctuation_table.defined() && punctuation_table.size(0) > 0) {
    const std::int64_t size = punctuation_table.size(0);
    punctuation = punctuation_table.index_select(0, tensors.ids.clamp(0, size - 1).flatten()).view_as(tensors.ids).logical_and(
                  tensors.ids.lt(size));
  }
  const BatchContext context{tensors.ids,
                             tensors.valid,
                             tensors.queries,
                             tensors.special,
                             tensors.idf,
                             shape.causal,
                             text.shape.bos_id.has_value(),
                             feeds.value_or(BatchSource::corpus),
                             batch_index,
                             any_words ? &words : nullptr,
                             nullptr,
                             nullptr,
                             punctuation.defined() ? &punctuation : nullptr,
                             needle_targets.defined() ? &needle_targets : nullptr};
  observers.begin_batch();
  const bool recording = record_examples && examples != nullptr;
  const std::int64_t rows = tensors.ids.size(1);
  // Only where no other attention can follow the last layer's: every attention node of the graph
  // runs once per call, and there are as many as the layers the first sequence showed (a model
  // whose depth depends on its input keeps running whole, and is refused when it breaks the shape).
  const bool stop_after_attention =
      mode.stop_after_attention && model->attention_runs_once() && model->softmax_count() == shape.layers;
  bool unwind = false;  // the callback stops the forward (only where the model cannot end there itself)
  const AttentionCallback on_attention = [&](int layer, const at::Tensor& attention, std::int64_t first_row) {
    if (layer >= shape.layers || attention.size(1) != shape.heads) {
      throw InputError(fmt::format(
          "the model produced attention for layer {} with {} heads, but the first sequence showed {} layers "
          "of {} heads; headscan needs the same attention layers for every input (models whose layers depend "
          "on the input, such as early exits, are not supported)",
          layer, attention.size(1), shape.layers, shape.heads));
    }
    // Checked with the batch's sums, before the layer's statistics: one wait for the device per batch.
    observers.pending_sums().add(nonfinite_attention(attention, &tensors.valid, first_row).view({1}),
                                 [layer](const double* broken, std::int64_t) {
                                   if (broken[0] != 0) report_nonfinite_attention(layer);
                                 });
    if (feeds) {
      BatchContext block = context;
      block.first_row = first_row;
      observers.observe(layer, attention, block);
    }
    for (std::size_t b = 0; recording && b < batch.size(); ++b) {
      const int example = batch[b].example;
      if (example >= 0 && example < static_cast<int>(examples->size())) {
        record_example_attention((*examples)[static_cast<std::size_t>(example)], layer,
                                 attention[static_cast<std::int64_t>(b)], first_row);
      }
    }
    if (mode.watch != nullptr) (*mode.watch)(layer, attention, first_row);
    if (unwind && layer == shape.layers - 1 && first_row + attention.size(2) == rows) throw ForwardStopped();
  };
  ForwardOutput output;
  try {
    if (mode.replay != nullptr) {
      (*mode.replay)(on_attention);
    } else if (!stop_after_attention || !model->forward_attention(tensors.ids, &tensors.mask, on_attention)) {
      unwind = stop_after_attention;
      output = model->forward(tensors.ids, &tensors.mask, on_attention, scales, edit, mode.logits_rows);
    }
  } catch (const ForwardStopped&) {
    // Every layer's attention has been read; the rest of the forward is not needed.
  }
  observers.end_batch();
  return output;
}

}  // namespace headscan
