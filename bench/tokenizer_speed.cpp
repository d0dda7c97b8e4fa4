// Tokenizer throughput on one core: tokens per second of Tokenizer::encode over the lines of a
// text file, as the analysis calls it (one line = one document). Run by bench/run_tokenizer_speed.sh.
//
//   headscan_bench_tokenizer --tokenizer tokenizer.json TEXT [--repeats N]
//
// Each repeat loads a fresh tokenizer, so the first pass over the text starts with an empty word
// cache ("cold"); a second pass with the same tokenizer shows the steady state ("warm").

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "analyzer/corpus/text_lines.h"
#include "analyzer/tokenizers/tokenizer.h"

namespace {

struct Pass {
  double seconds = 0;      // wall clock
  double cpu_seconds = 0;  // this thread's CPU time: what one core gives when the machine is shared
  std::size_t tokens = 0;
};

double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

Pass encode_all(const headscan::Tokenizer& tokenizer, const std::vector<std::string>& lines) {
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = thread_cpu_seconds();
  Pass pass;
  for (const std::string& line : lines) pass.tokens += tokenizer.encode(line).size();
  pass.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  pass.cpu_seconds = thread_cpu_seconds() - cpu_start;
  return pass;
}

}  // namespace

int main(int argc, char** argv) {
  std::string tokenizer_path;
  std::string text_path;
  int repeats = 3;
  CLI::App app{"headscan tokenizer benchmark: tokens per second of encode() on one core"};
  app.add_option("--tokenizer", tokenizer_path, "tokenizer.json or .model")->required();
  app.add_option("text", text_path, "text file, one document per line")->required();
  app.add_option("--repeats", repeats, "fresh tokenizers to time; the median is reported")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> lines;
  std::size_t bytes = 0;
  try {
    headscan::TextCorpusReader reader(text_path);  // the analysis reads lines the same way
    headscan::CorpusLine line;
    while (reader.next(line)) {
      bytes += line.text.size();
      lines.push_back(std::move(line.text));
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }

  std::vector<double> cold_rates;
  std::vector<double> warm_rates;
  std::vector<double> cold_cpu_rates;
  std::vector<double> warm_cpu_rates;
  std::size_t tokens = 0;
  std::string description;
  for (int repeat = 0; repeat < std::max(1, repeats); ++repeat) {
    const auto tokenizer = headscan::load_tokenizer_file(tokenizer_path);
    description = tokenizer->describe();
    const Pass cold = encode_all(*tokenizer, lines);
    const Pass warm = encode_all(*tokenizer, lines);
    tokens = cold.tokens;
    cold_rates.push_back(static_cast<double>(cold.tokens) / cold.seconds);
    warm_rates.push_back(static_cast<double>(warm.tokens) / warm.seconds);
    cold_cpu_rates.push_back(static_cast<double>(cold.tokens) / cold.cpu_seconds);
    warm_cpu_rates.push_back(static_cast<double>(warm.tokens) / warm.cpu_seconds);
  }
  auto median = [](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
  };
  const double cold = median(cold_rates);
  const double warm = median(warm_rates);
  const double cold_cpu = median(cold_cpu_rates);
  const double warm_cpu = median(warm_cpu_rates);
  fmt::print("tokenizer: {} ({})\n", description, tokenizer_path);
  fmt::print("text: {} lines, {:.2f} MB, {} tokens ({:.2f} bytes/token)\n", lines.size(), bytes / 1e6, tokens,
             static_cast<double>(bytes) / static_cast<double>(tokens));
  const double bytes_per_token = static_cast<double>(bytes) / static_cast<double>(tokens);
  fmt::print("cold (empty word cache): {:.2f} M tokens/s wall, {:.2f} M tokens/s per CPU second, {:.1f} MB/s wall\n",
             cold / 1e6, cold_cpu / 1e6, cold * bytes_per_token / 1e6);
  fmt::print("warm (second pass):      {:.2f} M tokens/s wall, {:.2f} M tokens/s per CPU second, {:.1f} MB/s wall\n",
             warm / 1e6, warm_cpu / 1e6, warm * bytes_per_token / 1e6);
  return 0;
}
