// The corpus pass: every sequence of the corpus (up to --max-sequences), in batches of equal or
// padded length, through the instrumented model to the corpus classifiers.
#include <chrono>

#include <fmt/format.h>

#include "analyzer/errors.h"
#include "analyzer/run/passes/pass.h"
#include "analyzer/run/progress.h"
#include "analyzer/run/sequences/deferred_words.h"
#include "analyzer/run/run_state.h"

namespace headscan {
namespace {

// Sequences waiting in the batcher, in batches: enough for neighbours in length to meet.
constexpr std::size_t kBufferedBatches = 32;

// The corpus line of the first sequence of a batch that the model refuses alone, else the batch's
// first line: a batch fails for one of its sequences (the longest, beyond the position table; one
// with a token beyond the embedding), and the error names the line it came from. Only on the way
// out of a failed run: the sequences run again, one at a time, feeding no statistics.
std::size_t line_failing_alone(RunState& state, const std::vector<Sequence>& batch) {
  if (batch.size() == 1) return batch.front().line_number;
  for (const Sequence& sequence : batch) {
    try {
      state.forward({sequence}, std::nullopt, 0, nullptr);
    } catch (const Interrupted&) {
      throw;
    } catch (const std::exception&) {
      return sequence.line_number;
    }
  }
  return batch.front().line_number;
}

class CorpusPass : public Pass {
 public:
  const char* name() const override { return "corpus"; }
  std::optional<BatchSource> feeds() const override { return BatchSource::corpus; }

  void run(RunState& state) override {
    const auto start = std::chrono::steady_clock::now();
    const AnalysisOptions& options = state.options;
    DocumentReader& reader = *state.reader;
    CorpusSummary& summary = state.corpus_summary;
    const auto batch_size = static_cast<std::size_t>(options.batch_size);
    Batcher batcher(batch_size, state.pads(), batch_size * kBufferedBatches);
    const bool by_sequences = options.max_sequences > 0;
    // A corpus of unknown size (still being written: an iterable of the Python package) counts its
    // sequences, of no known total.
    const bool count_sequences = by_sequences || reader.total_bytes() == 0;
    Progress progress(options.progress, by_sequences ? options.max_sequences : reader.total_bytes(),
                      count_sequences ? "sequences" : "corpus", options.on_progress,
                      count_sequences ? "sequences" : "bytes");
    std::int64_t queued = 0;
    std::int64_t batch_index = 0;
    auto run_batches = [&](const std::vector<std::vector<Sequence>>& batches) {
      // link-grammar parses these batches' documents first, in the order they run, while the
      // model runs the first.
      for (const auto& batch : batches) prefer_parses(batch);
      for (const auto& batch : batches) {
        try {
          state.observe(batch, *feeds(), batch_index++, &state.corpus_examples);
        } catch (const InputError&) {
          rethrow_with_context(fmt::format("{} (corpus line {}): ", state.model->path(), line_failing_alone(state, batch)));
        } catch (...) {
          rethrow_with_context(fmt::format("{} (corpus line {}): ", state.model->path(), batch.front().line_number));
        }
        for (const Sequence& sequence : batch) summary.tokens += static_cast<std::int64_t>(sequence.ids.size());
        summary.sequences += static_cast<std::int64_t>(batch.size());
        progress.update(count_sequences ? summary.sequences : reader.counts().bytes_read, summary.tokens);
      }
    };
    std::vector<Sequence> sequences = std::move(state.first_sequences);
    // Batches never mix chunks of the corpus, so that a shard's batches are the single run's
    // (CorpusSlice).
    std::uint64_t chunk = sequences.empty() ? 0 : sequences.front().chunk;
    do {
      for (auto& sequence : sequences) {
        if (by_sequences && queued == options.max_sequences) break;
        if (sequence.chunk != chunk) {
          run_batches(batcher.flush());
          chunk = sequence.chunk;
        }
        // A shard's ablation set is read by shard 0 from the corpus's start (make_ablation_set_pass).
        if (state.objective && !options.shard && queued < options.ablation_sequences) {
          if (auto item = make_ablation_item(sequence, *state.objective, static_cast<std::size_t>(queued), options.seed)) {
            state.ablation_items.push_back(std::move(*item));
          }
        }
        // --examples: the user's prompts are the report's examples (RunState::read_examples).
        if (options.examples_path.empty()) state.corpus_example_chooser.offer(sequence);
        if (state.record_examples && sequence.example >= 0) {
          state.corpus_examples.push_back(make_example(state.corpus_example_chooser.chosen().back(),
                                                       *state.text.tokenizer, state.shape, "corpus line"));
        }
        batcher.add(std::move(sequence));
        ++queued;
      }
      run_batches(batcher.take_ready());
      if (by_sequences && queued == options.max_sequences) {
        summary.truncated = true;
        break;
      }
    } while (state.sequences->next(sequences, nullptr, by_sequences ? options.max_sequences - queued : 0));
    run_batches(batcher.flush());
    reader.finish_parses();  // the documents read but not run (--max-sequences) count too
    progress.finish(summary.tokens);
    state.corpus_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.note_expansion(reader);
    // Of the sentences this pass fed the model (the idf pass may read others).
    if (const std::string warning = reader.text_warning(); !warning.empty()) state.warnings.push_back(warning);
  }
};

}  // namespace

std::unique_ptr<Pass> make_corpus_pass() { return std::make_unique<CorpusPass>(); }

}  // namespace headscan
