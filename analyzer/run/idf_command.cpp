#include "analyzer/run/idf_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "analyzer/errors.h"
#include "analyzer/run/run_state.h"
#include "analyzer/run/spooled_input.h"

namespace headscan {
namespace {

namespace fs = std::filesystem;

bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  return !a.empty() && !b.empty() && fs::exists(a, error) && fs::exists(b, error) && fs::equivalent(a, b, error);
}

void check_output(const IdfOptions& options) {
  const std::string& out = options.output_path;
  if (out.empty()) throw InputError("headscan idf: give the file to write with -o FILE");
  for (const std::string& input : {options.model_path, options.tokenizer_path, options.corpus_path}) {
    if (same_file(out, input)) {
      throw InputError(fmt::format("{}: -o names an input of this command; give another file to write", out));
    }
  }
  std::error_code error;
  if (fs::is_directory(out, error)) throw InputError(fmt::format("{}: -o names a directory; give a file", out));
  if (fs::exists(out, error) && !options.force) {
    throw InputError(fmt::format("{}: exists; headscan leaves it as it is (use --force to replace it)", out));
  }
}

}  // namespace

IdfSummary run_idf(const IdfOptions& options) {
  check_output(options);
  AnalysisOptions analysis;
  analysis.model_path = options.model_path;
  analysis.corpus_path = options.corpus_path;
  std::optional<SpooledInput> spooled;  // "-": standard input, read once
  if (options.corpus_path == "-") {
    spooled.emplace();
    analysis.corpus_path = spooled->path();
  }
  analysis.text_field = options.text_field;
  RunState state(analysis);
  state.text = load_text_setup(options.model_path, options.tokenizer_path, options.max_length);
  const std::unique_ptr<DocumentFrequencies> frequencies =
      state.count_frequencies(analysis.corpus_path, options.max_sequences);

  // Written beside the target and renamed over it: the file is whole or absent.
  const fs::path target(options.output_path);
  std::string staging = (target.parent_path().empty() ? fs::path(".") : target.parent_path()).string() + "/." +
                        target.filename().string() + ".headscan-XXXXXX";
  const int fd = mkstemp(staging.data());
  if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot create a file beside it", options.output_path));
  close(fd);
  const mode_t mask = ::umask(0);  // mkstemp's 0600 would hide the file from the user's group
  ::umask(mask);
  ::chmod(staging.c_str(), 0666 & ~mask);
  try {
    frequencies->save(staging, *state.text.tokenizer);
    fs::rename(staging, target);
  } catch (...) {
    std::error_code ignored;
    fs::remove(staging, ignored);
    throw;
  }
  return IdfSummary{state.text.tokenizer_description, frequencies->documents()};
}

}  // namespace headscan
