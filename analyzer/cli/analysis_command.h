#pragma once
// The options of `headscan MODEL CORPUS [OPTIONS]`, declared once for both front ends: the command
// line parses argv with them, and the Python module turns scan()'s keyword arguments into the same
// flags (max_length=128 → --max-length 128), so both have one set of defaults, checks and messages.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "analyzer/run/analysis.h"

namespace headscan {

// An integer option's lower bound, stated plainly (CLI11's NonNegativeNumber and PositiveNumber
// report their range with DBL_MAX written out in full).
CLI::Validator at_least(std::int64_t minimum);

// --text-field names a JSON Lines field: given for a corpus of another format, it would be ignored.
// Throws InputError then.
void check_text_field(const CLI::Option& option, const std::string& corpus);

// --examples names a file of prompts: "-" (standard input, which the corpus may be) and a
// directory are refused saying what they are. Throws InputError.
void check_examples_path(const std::string& path);

class AnalysisCommand {
 public:
  AnalysisCommand();
  AnalysisCommand(const AnalysisCommand&) = delete;
  AnalysisCommand& operator=(const AnalysisCommand&) = delete;

  CLI::App& app() { return app_; }

  // Parses `args` (the program name first). Throws InputError with CLI11's message for bad usage;
  // --help and --version are usage errors here (for front ends that print nothing).
  void parse(std::vector<std::string> args);

  // After parsing: the checks CLI11 cannot make (paths, --examples, --text-field, --seed,
  // --threshold with --sink and --window, --shard), then the options. Throws InputError.
  AnalysisOptions finish();

  bool quiet() const { return quiet_; }
  const std::string& shard() const { return shard_; }

  // An option a front end may give, by its long name without "--" ("max-length").
  struct Flag {
    std::string name;
    bool takes_value = true;  // false: a flag (--ablation)
    bool repeatable = false;  // --threshold
  };
  // Every option but the positionals, --help and --version.
  std::vector<Flag> flags() const;

 private:
  AnalysisOptions options_;
  std::vector<std::string> thresholds_;
  std::optional<std::int64_t> sink_;
  std::optional<std::int64_t> window_;
  std::string seed_ = "0";
  std::string shard_;
  std::string needle_lengths_;
  std::string probes_ = "default";
  std::string attention_block_ = "auto";
  bool no_html_ = false;
  bool no_plots_ = false;
  bool quiet_ = false;
  CLI::Option* text_field_ = nullptr;
  CLI::App app_;
};

}  // namespace headscan
