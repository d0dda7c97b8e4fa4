#include "analyzer/cli/analysis_command.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <utility>

#include <fmt/format.h>

#include "analyzer/cli/option_values.h"
#include "analyzer/errors.h"
#include "analyzer/model/model.h"

namespace headscan {

CLI::Validator at_least(std::int64_t minimum) {
  return CLI::Validator(
      [minimum](std::string& text) -> std::string {
        std::int64_t value = 0;
        if (!CLI::detail::lexical_cast(text, value)) return fmt::format("expected an integer, found \"{}\"", text);
        if (value < minimum) return fmt::format("must be at least {}, found {}", minimum, value);
        return {};
      },
      fmt::format(">={}", minimum));
}

void check_text_field(const CLI::Option& option, const std::string& corpus) {
  if (option.count() == 0 || is_jsonl_path(corpus)) return;
  throw InputError(fmt::format(
      "--text-field applies to JSON Lines corpora (.jsonl), and {} is not one{}; leave the option out, or give the "
      ".jsonl file",
      corpus == "-" ? "standard input" : corpus, corpus == "-" ? " (standard input is read as plain text)" : ""));
}

void check_examples_path(const std::string& path) {
  const std::string expected = "expected a text file of prompts, one per line";
  if (path == "-") {
    throw InputError(fmt::format("--examples -: {}, found \"-\", standard input, which only the corpus may be read "
                                 "from; write the prompts to a file and give its path",
                                 expected));
  }
  std::error_code error;
  if (!path.empty() && std::filesystem::is_directory(path, error)) {
    throw InputError(fmt::format("--examples {}: {}, found a directory; give a text file inside it", shown_path(path),
                                 expected));
  }
}

AnalysisCommand::AnalysisCommand()
    : app_("headscan: label the attention heads of a transformer (an exported program or a TorchScript "
           "archive) by what they do") {
  app_.set_version_flag("--version", std::function<std::string()>([] {
    // OMP_WAIT_POLICY as LibTorch's OpenMP threads read it (PASSIVE unless the user gave one: wait_policy.cpp).
    const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
    return fmt::format("headscan {} ({}; OMP_WAIT_POLICY={})", HEADSCAN_VERSION, libtorch_description(),
                       wait_policy == nullptr ? "unset" : wait_policy);
  }));
  app_.footer("Subcommands: headscan export MODEL_DIR OUT.pt2 exports a Hugging Face model directory with "
              "torch.export, headscan's observers in the program (Python: headscan export --help); headscan "
              "tokenize [--tokenizer FILE | MODEL.pt] [FILE] prints the token ids and spans the analysis uses (headscan tokenize --help); headscan idf [MODEL.pt] CORPUS -o FILE counts a corpus's "
              "document frequencies once, for --idf (headscan idf --help); headscan merge DIR... -o OUT combines the "
              "shards of a --shard run into its report (headscan merge --help); headscan compare RUN... -o OUT puts reports "
              "side by side, e.g. checkpoints across training (headscan compare --help).");
  app_.add_option("model", options_.model_path,
                  "the model: an exported program (.pt2, from headscan export) or a TorchScript archive (.pt, "
                  "torch.jit.save), told apart by content")->required();
  app_.add_option("corpus", options_.corpus_path,
                  "text corpus, one document per line; a JSON Lines file (.jsonl), one object per document; or a "
                  "CoNLL-U file (.conllu), one sentence per document")
      ->required();
  text_field_ =
      app_.add_option("--text-field", options_.text_field, "the document's field in a JSON Lines (.jsonl) corpus")
          ->capture_default_str();
  app_.add_option("-o,--output", options_.output_dir, "report directory to create")->capture_default_str();
  app_.add_flag("--force", options_.force, "replace the output directory if it exists and is not empty");
  app_.add_option("--tokenizer", options_.tokenizer_path,
                  "tokenizer.json or SentencePiece .model to use instead of the one inside the model");
  app_.add_option("--threads", options_.threads, "CPU threads for LibTorch (0: all cores)")
      ->check(at_least(0))->capture_default_str();
  app_.add_option("--batch-size", options_.batch_size, "sequences per forward call")
      ->check(at_least(1))->capture_default_str();
  app_.add_option("--max-length", options_.max_length,
                  "tokens per sequence, BOS included; longer lines are cut into windows "
                  "(default: max_length of headscan.json, else 512)")
      ->check(CLI::Range(std::int64_t{2}, std::int64_t{1} << 20));
  app_.add_option("--attention-block", attention_block_,
                  "query rows per block of headscan's attention op: auto (planned from the device's free memory, "
                  "the whole T x T where it fits) or a number N >= 1; the rows of every block at most N")
      ->capture_default_str();
  app_.add_option("--needle-lengths", needle_lengths_,
                  "the needle probes' lengths in tokens, e.g. 4096,16384 (from 37 to max_length; default: 4096, 8192, "
                  "... doubling up to max_length, and max_length; only max_length when it is at most 4096)")
      ->type_name("L1,L2,...");
  app_.add_option("--probes", probes_,
                  "the induction and needle probes: default (as many as their scores need), none (no induction, "
                  "duplicate-token or retrieval scores), N (N induction probes, at most N haystacks per needle "
                  "cell), or per kind, e.g. induction=5,needles=none")
      ->type_name("default|none|N|KIND=VALUE,...")
      ->capture_default_str();
  app_.add_option("--dtype", options_.dtype,
                  "cast the model's floating-point parameters to this dtype when loading it (default: run it in "
                  "the dtype its archive holds); attention statistics are summed in float32 or wider either way")
      ->check(CLI::IsMember({"float32", "bfloat16", "float16"}));
  app_.add_option("--device", options_.device,
                  "where the model, its attention and every statistic run: auto (the first GPU when LibTorch sees "
                  "one, else the CPU), cpu, cuda (the first GPU) or cuda:N")
      ->capture_default_str();
  app_.add_option("--max-sequences", options_.max_sequences, "stop after this many sequences (0: whole corpus)")
      ->check(at_least(0))->capture_default_str();
  app_.add_option("--seed", seed_, "seed for the synthetic probe sequences, masked-LM masks and random pruning orders "
                                  "(0 to 2^64 - 1)")
      ->capture_default_str();
  app_.add_flag("--ablation", options_.ablation,
                "causal evidence: head importance (gradients), the loss with each head removed, a pruning curve and "
                "the circuits of induction and duplicate-token heads");
  app_.add_option("--ablation-sequences", options_.ablation_sequences,
                  "the first N sequences of the corpus are the set --ablation measures the loss on")
      ->check(at_least(1))->capture_default_str();
  app_.add_option("--threshold", thresholds_,
                  "change a label threshold, NAME=VALUE (e.g. previous_token=0.6); repeatable")
      ->type_name("NAME=VALUE");
  app_.add_option("--sink", sink_,
                  "streaming heads and the KV-cache plan: the sink tokens a streaming cache keeps (default 4; the "
                  "threshold streaming_sink)")
      ->check(CLI::Range(static_cast<std::int64_t>(count_threshold_minimum("streaming_sink")),
                         static_cast<std::int64_t>(kMaxThresholdCount)));
  app_.add_option("--window", window_,
                  "streaming heads and the KV-cache plan: the recent tokens a streaming cache keeps (default 64; the "
                  "threshold streaming_window)")
      ->check(CLI::Range(static_cast<std::int64_t>(count_threshold_minimum("streaming_window")),
                         static_cast<std::int64_t>(kMaxThresholdCount)));
  app_.add_option("--examples", options_.examples_path,
                  "a text file of prompts, one per line: the example sequences the report draws (up to 8), instead "
                  "of the corpus's first lines; they do not count in any score")
      ->type_name("FILE");
  app_.add_option("--idf", options_.idf_path,
                  "document frequencies of a reference corpus for rare-word heads (format: idf.txt of a report)");
  app_.add_option("--parser", options_.parser,
                  "dependency parser for syntactic heads on plain text: link-grammar (English) or none; a .conllu "
                  "corpus brings its own trees")
      ->check(CLI::IsMember({"link-grammar", "none"}))->capture_default_str();
  app_.add_option("--shard", shard_,
                  "analyse the I-th (from 0) of N slices of the corpus and write the shard's state to the output "
                  "directory, for headscan merge; e.g. --shard ${SLURM_ARRAY_TASK_ID}/${SLURM_ARRAY_TASK_COUNT}")
      ->type_name("I/N");
  app_.add_flag("--no-html", no_html_, "write no HTML pages");
  app_.add_flag("--no-plots", no_plots_, "write no PNG plots");
  app_.add_flag("-q,--quiet", quiet_, "no progress or summary output");
}

void AnalysisCommand::parse(std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());
  args.pop_back();  // the program's name
  try {
    app_.parse(args);
  } catch (const CLI::CallForHelp&) {
    throw InputError("--help is for the command line");
  } catch (const CLI::CallForVersion&) {
    throw InputError("--version is for the command line");
  } catch (const CLI::ParseError& e) {
    throw InputError(e.what());
  }
}

AnalysisOptions AnalysisCommand::finish() {
  check_path_option("the model path", options_.model_path);
  if (options_.corpus_path != "-") check_path_option("the corpus path", options_.corpus_path);
  const std::pair<const char*, const std::string*> paths[] = {{"-o", &options_.output_dir},
                                                              {"--tokenizer", &options_.tokenizer_path},
                                                              {"--examples", &options_.examples_path},
                                                              {"--idf", &options_.idf_path}};
  for (const auto& [option, path] : paths) check_path_option(option, *path);
  check_examples_path(options_.examples_path);
  check_text_field(*text_field_, options_.corpus_path);
  options_.seed = parse_seed_option(seed_);
  options_.attention_block = parse_attention_block_option(attention_block_);
  if (app_.count("--needle-lengths") > 0) options_.needle_lengths = parse_needle_lengths_option(needle_lengths_);
  options_.probes = parse_probes_option(probes_);
  options_.thresholds = parse_threshold_options(thresholds_);
  if (sink_) set_streaming_size(options_.thresholds, "--sink", "streaming_sink", *sink_);
  if (window_) set_streaming_size(options_.thresholds, "--window", "streaming_window", *window_);
  if (!shard_.empty()) {
    const ShardOption parsed = parse_shard_option(shard_);
    options_.shard = CorpusSlice{parsed.index, parsed.count};
  }
  options_.progress = !quiet_;
  options_.html = !no_html_;
  options_.plots = !no_plots_;
  return options_;
}

std::vector<AnalysisCommand::Flag> AnalysisCommand::flags() const {
  std::vector<Flag> flags;
  for (const CLI::Option* option : app_.get_options()) {
    if (option->get_positional() || option->get_lnames().empty()) continue;
    const std::string& name = option->get_lnames().front();
    if (name == "help" || name == "version") continue;
    // A flag expects no value; --threshold, a vector, any number of them.
    flags.push_back(Flag{name, option->get_expected_max() != 0, option->get_expected_max() > 1});
  }
  return flags;
}

}  // namespace headscan
