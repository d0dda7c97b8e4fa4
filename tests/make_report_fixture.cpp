// Writes the reports that the browser tests open (tests/browser/check_report.py), from hand-made
// inputs (tests/report_fixture.h): DIR/small (2 layers × 4 heads, English), DIR/hostile (markup and
// script in every string), DIR/scripts (Chinese, Cyrillic, emoji tokens), DIR/large (12 × 12), and
// with the causal evidence of --ablation DIR/ablation (4 × 6, English) and DIR/hostile_ablation.
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "tests/report_fixture.h"

using namespace headscan;
using namespace headscan::testing;

namespace {

void write(const std::filesystem::path& directory, int layers, int heads, FixtureText text, std::size_t count,
           std::size_t length, FixtureAblation ablation = FixtureAblation::none) {
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  const auto examples = fixture_examples(layers, heads, fixture_token_lists(text, count, length));
  const auto probes = fixture_probes(layers, heads, 12, 3);
  const auto document = fixture_heads_json(layers, heads, examples, probes, text, 12345, ablation);
  std::ofstream(directory / "heads.json") << document.dump(2) << '\n';
  write_reports(directory, document, examples, probes, ReportOptions{});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_report_fixture DIR\n";
    return 2;
  }
  try {
    const std::filesystem::path root = argv[1];
    write(root / "small", 2, 4, FixtureText::plain, 4, 14);
    write(root / "hostile", 2, 4, FixtureText::hostile, 3, 16);
    write(root / "scripts", 2, 3, FixtureText::scripts, 2, 16);
    write(root / "large", 12, 12, FixtureText::plain, 8, 64);
    write(root / "ablation", 4, 6, FixtureText::plain, 4, 14, FixtureAblation::full);
    write(root / "hostile_ablation", 2, 4, FixtureText::hostile, 3, 16, FixtureAblation::full);
  } catch (const std::exception& error) {
    std::cerr << "make_report_fixture: " << error.what() << '\n';
    return 1;
  }
  return 0;
}
