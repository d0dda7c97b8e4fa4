// --threshold NAME=VALUE: each input line is one value; accepted values are finite and in range.

#include <cmath>
#include <string>

#include "analyzer/cli/option_values.h"
#include "analyzer/errors.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> values;
  for (std::string_view line : headscan::fuzz::lines_of(std::string_view(reinterpret_cast<const char*>(data), size))) {
    values.emplace_back(line);
  }
  try {
    for (const auto& [name, value] : headscan::parse_threshold_options(values)) {
      HEADSCAN_FUZZ_CHECK(!name.empty() && std::isfinite(value) && value >= 0);
      HEADSCAN_FUZZ_CHECK(value <= (name == "syntactic_support" ? headscan::kMaxThresholdCount : 1.0));
    }
  } catch (const headscan::InputError&) {
  }
  return 0;
}
