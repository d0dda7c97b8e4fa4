// --threshold NAME=VALUE: each input line is one value; accepted values are finite and in range.
// --shard I/N: the first line is one value; an accepted one has I < N <= kMaxShards.
// --steps A,B,…: the first line too; accepted steps are 0 … kMaxMetadataStep, one per comma-separated item.
// --seed N: the first line too; an accepted seed is the decimal number the line spells.
// --probes VALUE: the first line too; each kind of an accepted value is kPlannedProbes, 0 or 1 …
// kMaxProbeCount.
// Count thresholds lie in count_threshold_minimum(name) … kMaxThresholdCount, the range --sink and
// --window take.

#include <algorithm>
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
  if (!values.empty()) {
    try {
      const headscan::ShardOption shard = headscan::parse_shard_option(values.front());
      HEADSCAN_FUZZ_CHECK(shard.count >= 1 && shard.count <= headscan::kMaxShards && shard.index < shard.count);
    } catch (const headscan::InputError&) {
    }
  }
  if (!values.empty()) {
    try {
      const std::vector<std::int64_t> steps = headscan::parse_steps_option(values.front());
      HEADSCAN_FUZZ_CHECK(steps.size() == static_cast<std::size_t>(std::count(values.front().begin(), values.front().end(), ',')) + 1);
      for (const std::int64_t step : steps) HEADSCAN_FUZZ_CHECK(step >= 0 && step <= headscan::kMaxMetadataStep);
    } catch (const headscan::InputError&) {
    }
  }
  if (!values.empty()) {
    try {
      const std::uint64_t seed = headscan::parse_seed_option(values.front());
      std::string digits = values.front();  // without leading zeros
      digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
      HEADSCAN_FUZZ_CHECK(std::to_string(seed) == digits);
    } catch (const headscan::InputError&) {
    }
  }
  if (!values.empty()) {
    try {
      const headscan::ProbeBudget budget = headscan::parse_probes_option(values.front());
      for (const std::int64_t count : {budget.induction, budget.needles}) {
        HEADSCAN_FUZZ_CHECK(count == headscan::kPlannedProbes || (count >= 0 && count <= headscan::kMaxProbeCount));
      }
    } catch (const headscan::InputError&) {
    }
  }
  try {
    for (const auto& [name, value] : headscan::parse_threshold_options(values)) {
      HEADSCAN_FUZZ_CHECK(!name.empty() && std::isfinite(value) && value >= 0);
      const bool count = headscan::is_count_threshold(name);
      HEADSCAN_FUZZ_CHECK(value <= (count ? headscan::kMaxThresholdCount : 1.0));
      if (count) HEADSCAN_FUZZ_CHECK(std::floor(value) == value && value >= headscan::count_threshold_minimum(name));
    }
  } catch (const headscan::InputError&) {
  }
  return 0;
}
