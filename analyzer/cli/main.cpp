// The headscan command line: parses options into AnalysisOptions and calls the library.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "analyzer/cli/analysis_command.h"
#include "analyzer/cli/export_command.h"
#include "analyzer/cli/option_values.h"
#include "analyzer/corpus/text_lines.h"
#include "analyzer/errors.h"
#include "analyzer/model/model.h"
#include "analyzer/run/analysis.h"
#include "analyzer/run/commands/compare_command.h"
#include "analyzer/run/commands/idf_command.h"
#include "analyzer/run/commands/tokenize_command.h"
#include "analyzer/run/shards/merge_command.h"
#include "reports/text.h"

namespace {

// Every line headscan prints passes here, so that no text from an input (a model's BOS token, a
// file name, a shard's warning) reaches the terminal with its control characters: terminal_text().
template <typename... Args>
void print_line(std::FILE* stream, fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(stream, "{}\n", headscan::terminal_text(fmt::format(format, std::forward<Args>(args)...)));
}

constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;

void print_summary(const headscan::AnalysisSummary& summary) {
  print_line(stdout, "analysed {} sequences ({} tokens) in {:.1f} s: {} layers x {} heads", summary.sequences,
             summary.tokens, summary.seconds, summary.layers, summary.heads);
  std::vector<std::string> counts;
  for (const auto& [label, count] : summary.label_counts) counts.push_back(fmt::format("{} {}", count, label));
  print_line(stdout, "primary labels: {}", fmt::join(counts, ", "));
  for (const std::string& line : summary.findings) print_line(stdout, "{}", line);
  print_line(stdout, "report: {}/heads.json", summary.output_dir);
}

// Runs a command body, mapping its errors to exit codes: InputError → 2, anything else → 1.
template <typename Body>
int run_with_exit_codes(Body&& body) {
  try {
    return body();
  } catch (const headscan::InputError& e) {
    print_line(stderr, "headscan: error: {}", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    print_line(stderr, "headscan: failed: {}", e.what());
    return kExitFailure;
  }
}

// Parses a subcommand's options: nullopt to go on, else the exit code (help printed, or exit 2 with
// CLI11's message for bad usage).
std::optional<int> parse_subcommand(CLI::App& app, int argc, char** argv, const char* name) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_line(stderr, "headscan {}: error: {}", name, e.what());
    print_line(stderr, "Run with --help for more information.");
    return kExitBadInput;
  }
  return std::nullopt;
}

// `headscan tokenize [--tokenizer FILE | MODEL.pt] [FILE]`: parsed on its own, before the analysis
// options (whose positionals model and corpus are required). argv[0] is "tokenize".
int run_tokenize_command(int argc, char** argv) {
  headscan::TokenizeOptions options;
  std::vector<std::string> inputs;
  std::string text;
  bool quiet = false;
  CLI::App app{"Prints, for each line of FILE (standard input when absent or -), one JSON object per sequence "
               "window: the token ids, token strings and character spans exactly as the analysis uses them "
               "(BOS included).",
               "headscan tokenize"};
  app.add_option("inputs", inputs,
                 "MODEL.pt (its tokenizer.json and headscan.json) then FILE; with --tokenizer, a single "
                 "argument is FILE")
      ->expected(0, 2)
      ->type_name("[MODEL.pt] [FILE]");
  app.add_option("--tokenizer", options.tokenizer_path,
                 "tokenizer.json or SentencePiece .model (instead of the one inside the model)");
  auto* text_option = app.add_option("--text", text, "tokenize this text instead of a file");
  app.add_option("--max-length", options.max_length,
                 "tokens per window, BOS included (default: max_length of headscan.json, else 512)")
      ->check(CLI::Range(std::int64_t{2}, std::int64_t{1} << 20));
  app.add_flag("-q,--quiet", quiet, "no summary on standard error");
  if (const auto exit_code = parse_subcommand(app, argc, argv, "tokenize")) return *exit_code;
  if (text_option->count() > 0) options.text = text;
  const bool file_only = !options.tokenizer_path.empty() && inputs.size() == 1;
  if (!file_only && !inputs.empty()) options.model_path = inputs[0];
  if (inputs.size() == 2 || file_only) options.input_path = inputs.back();
  if (options.text && !options.input_path.empty()) {
    print_line(stderr, "headscan tokenize: error: give either --text or FILE, not both");
    return kExitBadInput;
  }

  return run_with_exit_codes([&] {
    for (const std::string& input : inputs) {
      if (input != "-") headscan::check_path_option("headscan tokenize", input);
    }
    headscan::check_path_option("--tokenizer", options.tokenizer_path);
    const headscan::TokenizeSummary summary = headscan::run_tokenize(options, std::cin, std::cout);
    std::cout.flush();
    for (const std::string& warning : summary.warnings) print_line(stderr, "headscan: warning: {}", warning);
    if (!quiet) {
      print_line(stderr, "tokenizer: {}; BOS: {}; suffix: {}; max_length {}; {} lines, {} windows, {} tokens",
                 summary.tokenizer, summary.bos, summary.suffix, summary.max_length, summary.documents, summary.windows,
                 summary.tokens);
    }
    return 0;
  });
}

// `headscan idf [MODEL.pt] CORPUS -o FILE`: the corpus's document frequencies, for --idf.
int run_idf_command(int argc, char** argv) {
  headscan::IdfOptions options;
  std::vector<std::string> inputs;
  bool quiet = false;
  CLI::App app{"Counts the document frequencies of a corpus once, in the format --idf reads (idf.txt of a report), "
               "with the tokenizer the analysis would use.",
               "headscan idf"};
  app.add_option("inputs", inputs, "MODEL.pt (its tokenizer.json and headscan.json) then CORPUS; with --tokenizer, a "
                                   "single argument is CORPUS")
      ->required()
      ->expected(1, 2)
      ->type_name("[MODEL.pt] CORPUS");
  app.add_option("-o,--output", options.output_path, "the idf file to write")->required();
  app.add_flag("--force", options.force, "replace the output file if it exists");
  app.add_option("--tokenizer", options.tokenizer_path,
                 "tokenizer.json or SentencePiece .model (instead of the one inside the model)");
  app.add_option("--max-length", options.max_length,
                 "tokens per window, BOS included (default: max_length of headscan.json, else 512)")
      ->check(CLI::Range(std::int64_t{2}, std::int64_t{1} << 20));
  app.add_option("--max-sequences", options.max_sequences,
                 "count the documents of the first N sequences only, as a run with --max-sequences N does (0: all)")
      ->check(headscan::at_least(0))->capture_default_str();
  const CLI::Option* text_field =
      app.add_option("--text-field", options.text_field, "the document's field in a JSON Lines (.jsonl) corpus")
          ->capture_default_str();
  app.add_flag("-q,--quiet", quiet, "no summary on standard error");
  if (const auto exit_code = parse_subcommand(app, argc, argv, "idf")) return *exit_code;
  if (inputs.size() == 1 && options.tokenizer_path.empty()) {
    print_line(stderr, "headscan idf: error: give MODEL.pt and CORPUS, or --tokenizer FILE and CORPUS");
    return kExitBadInput;
  }
  if (inputs.size() == 2) options.model_path = inputs[0];
  options.corpus_path = inputs.back();
  return run_with_exit_codes([&] {
    for (const std::string& input : inputs) {
      if (input != "-") headscan::check_path_option("headscan idf", input);
    }
    headscan::check_path_option("--tokenizer", options.tokenizer_path);
    headscan::check_path_option("-o", options.output_path);
    headscan::check_text_field(*text_field, options.corpus_path);
    const headscan::IdfSummary summary = headscan::run_idf(options);
    for (const std::string& warning : summary.warnings) print_line(stderr, "headscan: warning: {}", warning);
    if (!quiet) {
      print_line(stderr, "tokenizer: {}; {} documents; wrote {}", summary.tokenizer, summary.documents,
                 options.output_path);
    }
    return 0;
  });
}

// `headscan merge DIR... -o OUT`: the shards of one run combined into its report.
int run_merge_command(int argc, char** argv) {
  headscan::MergeOptions options;
  std::vector<std::string> thresholds;
  bool no_html = false;
  bool no_plots = false;
  bool quiet = false;
  CLI::App app{"Combines the shards of one run (headscan MODEL CORPUS --shard I/N -o DIR) into the report a single "
               "run would write: heads.json, HTML and PNG plots.",
               "headscan merge"};
  app.add_option("shards", options.shard_directories, "the shards' directories, all of them, in any order")
      ->required()
      ->type_name("DIR...");
  app.add_option("-o,--output", options.output_dir, "report directory to create")->capture_default_str();
  app.add_flag("--force", options.force, "replace the output directory if it holds an earlier report");
  app.add_option("--threshold", thresholds,
                 "change a label threshold, NAME=VALUE, over the shards' thresholds; repeatable")
      ->type_name("NAME=VALUE");
  app.add_flag("--no-html", no_html, "write no HTML pages");
  app.add_flag("--no-plots", no_plots, "write no PNG plots");
  app.add_flag("-q,--quiet", quiet, "no summary");
  if (const auto exit_code = parse_subcommand(app, argc, argv, "merge")) return *exit_code;
  return run_with_exit_codes([&] {
    for (const std::string& directory : options.shard_directories) headscan::check_path_option("headscan merge", directory);
    headscan::check_path_option("-o", options.output_dir);
    options.thresholds = headscan::parse_threshold_options(thresholds);
    options.html = !no_html;
    options.plots = !no_plots;
    const headscan::MergeSummary summary = headscan::run_merge(options);
    for (const std::string& warning : summary.warnings) print_line(stderr, "headscan: warning: {}", warning);
    if (!quiet) {
      print_line(stdout, "merged {} shards: {} sequences ({} tokens), {} layers x {} heads; the shards took {:.1f} s, the "
                 "merge {:.2f} s",
                 summary.shards, summary.sequences, summary.tokens, summary.layers, summary.heads,
                 summary.shard_seconds, summary.seconds);
      std::vector<std::string> counts;
      for (const auto& [label, count] : summary.label_counts) counts.push_back(fmt::format("{} {}", count, label));
      print_line(stdout, "primary labels: {}", fmt::join(counts, ", "));
      print_line(stdout, "report: {}/heads.json", summary.output_dir);
    }
    return 0;
  });
}

// `headscan compare RUN... -o OUT`: reports side by side, checkpoints ordered by step.
int run_compare_command(int argc, char** argv) {
  headscan::CompareOptions options;
  std::string scores;
  std::string steps;
  bool no_html = false;
  bool no_plots = false;
  bool quiet = false;
  CLI::App app{"Puts the reports of several runs side by side (checkpoints of one training run, or a base model and "
               "its fine-tuned version): compare.json, compare.csv, and a report with the phase-change figure, each "
               "head's scores across the runs, the head maps of the runs and the label changes.",
               "headscan compare"};
  app.add_option("runs", options.runs,
                 "report directories (or their heads.json) of models of one shape; ordered by the step of their "
                 "headscan.json when every model has one, else as given")
      ->required()
      ->type_name("RUN...");
  app.add_option("-o,--output", options.output_dir, "comparison directory to create")->capture_default_str();
  app.add_flag("--force", options.force, "replace the output directory if it holds an earlier comparison");
  CLI::Option* scores_option = app.add_option("--scores", scores,
                 "the scores drawn per head across the runs and in the diff maps, comma-separated (default: "
                 "induction,previous_token,first_token,entropy, and importance when present)")
      ->type_name("NAME,...");
  CLI::Option* steps_option = app.add_option("--steps", steps, "the training step of each run, in the order given, e.g. 0,500,1000: orders the "
                                   "runs by it instead of their headscan.json's step")
      ->type_name("N,...");
  app.add_flag("--no-html", no_html, "write no HTML page");
  app.add_flag("--no-plots", no_plots, "write no PNG plots");
  app.add_flag("-q,--quiet", quiet, "no summary");
  if (const auto exit_code = parse_subcommand(app, argc, argv, "compare")) return *exit_code;
  return run_with_exit_codes([&] {
    for (const std::string& run : options.runs) headscan::check_path_option("headscan compare", run);
    headscan::check_path_option("-o", options.output_dir);
    // Given empty ("--scores ''", as an unset shell variable gives): an error, not the default.
    if (scores_option->count() > 0 && scores.empty()) {
      throw headscan::InputError("--scores is empty; give score names, e.g. --scores induction,entropy, or leave the "
                                 "option out for the default scores");
    }
    if (steps_option->count() > 0) options.steps = headscan::parse_steps_option(steps);
    if (!scores.empty()) {
      std::string_view rest(scores);
      while (true) {
        const std::size_t comma = rest.find(',');
        options.scores.emplace_back(rest.substr(0, comma));
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
    }
    options.html = !no_html;
    options.plots = !no_plots;
    const headscan::CompareSummary summary = headscan::run_compare(options);
    for (const std::string& warning : summary.warnings) print_line(stderr, "headscan: warning: {}", warning);
    if (!quiet) {
      print_line(stdout, "compared {} runs of {} layers x {} heads in {:.2f} s: {}", summary.runs, summary.layers,
                 summary.heads, summary.seconds, fmt::join(summary.order, ", "));
      print_line(stdout, "best induction score above 0.5 from {}; in-context-learning gap at least 1 nat from {}",
                 summary.induction_formed.empty() ? "no run" : summary.induction_formed,
                 summary.gap_formed.empty() ? "no run" : summary.gap_formed);
      print_line(stdout, "{} heads changed their primary label", summary.changed_heads);
      if (no_html) {
        print_line(stdout, "report: {}/compare.json (compare.csv beside it)", summary.output_dir);
      } else {
        print_line(stdout, "report: {}/index.html (compare.json and compare.csv beside it)", summary.output_dir);
      }
    }
    return 0;
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "tokenize") return run_tokenize_command(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "idf") return run_idf_command(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "merge") return run_merge_command(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "compare") return run_compare_command(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "export") return headscan::run_export_command(argc - 1, argv + 1);

  headscan::AnalysisCommand command;
  CLI::App& app = command.app();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_line(stderr, "headscan: error: {}", e.what());
    print_line(stderr, "Run with --help for more information.");
    return kExitBadInput;
  }

  return run_with_exit_codes([&] {
    const headscan::AnalysisOptions options = command.finish();
    const bool quiet = command.quiet();
    const std::string& shard = command.shard();
    const headscan::AnalysisSummary summary = headscan::run_analysis(options);
    for (const std::string& warning : summary.warnings) print_line(stderr, "headscan: warning: {}", warning);
    if (quiet) return 0;
    if (summary.shard_state) {
      print_line(stdout, "shard {}: analysed {} sequences ({} tokens) in {:.1f} s; its state is in {}: headscan merge the "
                 "directories of all shards",
                 shard, summary.sequences, summary.tokens, summary.seconds, summary.output_dir);
    } else {
      print_summary(summary);
    }
    return 0;
  });
}
