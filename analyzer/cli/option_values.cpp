#include "analyzer/cli/option_values.h"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <climits>
#include <cmath>
#include <cstring>
#include <iterator>

#include <fmt/format.h>

#include "analyzer/errors.h"

namespace headscan {

bool is_count_threshold(const std::string& name) {
  return std::any_of(std::begin(kCountThresholds), std::end(kCountThresholds),
                     [&](const char* count) { return name == count; });
}

namespace {

// A value as the user typed it, cut when long, with control characters shown as '?'.
std::string shown(const std::string& text) {
  constexpr std::size_t kShown = 60;
  std::string cut = text.size() > kShown ? text.substr(0, kShown) + "..." : text;
  for (char& c : cut) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
  }
  return cut;
}

// `text` as a whole number in decimal digits only (no sign, space or prefix) that fits `value`'s
// type; false otherwise, `value` then undefined.
template <typename Number>
bool decimal_number(std::string_view text, Number& value) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

double count_threshold_minimum(const std::string& name) { return name == "streaming_window" ? 1 : 0; }

ThresholdOption parse_threshold_option(const std::string& text) {
  const std::size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0) {
    throw InputError(fmt::format("--threshold {}: expected NAME=VALUE, e.g. --threshold previous_token=0.6; the names "
                                 "are those of heads.json's \"thresholds\"",
                                 shown(text)));
  }
  ThresholdOption option{text.substr(0, equals), 0};
  const std::string value_text = text.substr(equals + 1);
  const bool count = is_count_threshold(option.name);
  const double minimum = count_threshold_minimum(option.name);
  const std::string expected = count ? fmt::format("a whole number from {:.0f} to {:.0f} (a number of {})", minimum,
                                                   kMaxThresholdCount,
                                                   option.name == "syntactic_support" ? "sentences" : "tokens")
                                     : std::string("a number from 0 to 1 (a share of attention or of queries)");
  const char* const begin = value_text.data();
  const char* const end = begin + value_text.size();
  const auto [parsed_end, error] = std::from_chars(begin, end, option.value);
  const bool number = !value_text.empty() && error == std::errc() && parsed_end == end && std::isfinite(option.value);
  const bool in_range = number && (count ? option.value >= minimum && option.value <= kMaxThresholdCount &&
                                               std::floor(option.value) == option.value
                                         : option.value >= 0 && option.value <= 1);
  if (!in_range) {
    throw InputError(fmt::format("--threshold {}: expected {} after \"{}=\", found \"{}\"; e.g. --threshold {}={}",
                                 shown(text), expected, shown(option.name), shown(value_text), shown(option.name),
                                 count ? "20" : "0.6"));
  }
  return option;
}

std::map<std::string, double> parse_threshold_options(const std::vector<std::string>& texts) {
  std::map<std::string, double> thresholds;
  for (const std::string& text : texts) {
    ThresholdOption option = parse_threshold_option(text);
    if (!thresholds.emplace(option.name, option.value).second) {
      throw InputError(fmt::format("--threshold {}: the threshold {} is given twice; give each name once",
                                   shown(text), shown(option.name)));
    }
  }
  return thresholds;
}

void set_streaming_size(std::map<std::string, double>& thresholds, const std::string& option, const std::string& name,
                        std::int64_t value) {
  const auto given = thresholds.find(name);
  if (given != thresholds.end() && given->second != static_cast<double>(value)) {
    throw InputError(fmt::format("{} {} and --threshold {}={:.0f} give the streaming cache two sizes; give one of "
                                 "them (the threshold {} is what {} sets)",
                                 option, value, name, given->second, name, option));
  }
  thresholds[name] = static_cast<double>(value);
}

std::uint64_t parse_seed_option(const std::string& text) {
  std::uint64_t seed = 0;
  if (!decimal_number(text, seed)) {
    const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
    const char* found = digits                                  ? ", found a number past it"
                        : !text.empty() && text.front() == '-' ? ", found a negative number"
                                                                : "";
    throw InputError(fmt::format("--seed {}: expected a whole number from 0 to 18446744073709551615 (2^64 - 1) in "
                                 "decimal digits{}; e.g. --seed 42",
                                 shown(text), found));
  }
  return seed;
}

std::int64_t parse_attention_block_option(const std::string& text) {
  if (text == "auto") return 0;
  std::int64_t rows = 0;
  if (!decimal_number(text, rows) || rows < 1 || rows > (std::int64_t{1} << 31)) {
    throw InputError(fmt::format("--attention-block {}: expected auto or a number of query rows from 1 to 2147483648 "
                                 "(2^31); e.g. --attention-block 256",
                                 shown(text)));
  }
  return rows;
}

std::vector<std::int64_t> parse_needle_lengths_option(const std::string& text) {
  constexpr std::int64_t kLongest = std::int64_t{1} << 20;  // --max-length's own bound
  std::vector<std::int64_t> lengths;
  std::string_view rest(text);
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    std::int64_t length = 0;
    if (!decimal_number(item, length) || length < 1 || length > kLongest) {
      throw InputError(fmt::format("--needle-lengths {}: expected the needle probes' lengths in tokens, whole numbers "
                                   "from 37 to max_length separated by commas, e.g. --needle-lengths 4096,16384; "
                                   "found \"{}\"",
                                   shown(text), shown(std::string(item))));
    }
    lengths.push_back(length);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  return lengths;
}

namespace {

// One kind's value of --probes: default, none or N; false when it is none of them.
bool probe_count(std::string_view text, std::int64_t& count) {
  if (text == "default") {
    count = kPlannedProbes;
    return true;
  }
  if (text == "none") {
    count = 0;
    return true;
  }
  return decimal_number(text, count) && count >= 1 && count <= kMaxProbeCount;
}

}  // namespace

ProbeBudget parse_probes_option(const std::string& text) {
  const auto refuse = [&](const std::string& found) {
    return InputError(fmt::format("--probes {}: expected default, none, a number N from 1 to {} (N induction probes "
                                  "and at most N haystacks per needle cell), or per kind induction=VALUE and/or "
                                  "needles=VALUE separated by a comma, each VALUE default, none or N; found {}; e.g. "
                                  "--probes none, --probes 2 or --probes induction=5,needles=none",
                                  shown(text), kMaxProbeCount, found));
  };
  ProbeBudget budget;
  if (text.find('=') == std::string::npos) {
    std::int64_t count = 0;
    if (!probe_count(text, count)) throw refuse(fmt::format("\"{}\"", shown(text)));
    budget.induction = budget.needles = count;
    return budget;
  }
  bool induction = false;
  bool needles = false;
  std::string_view rest(text);
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const std::size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      throw refuse(fmt::format("\"{}\" without a kind", shown(std::string(item))));
    }
    const std::string_view kind = item.substr(0, equals);
    bool* given = kind == "induction" ? &induction : kind == "needles" ? &needles : nullptr;
    if (given == nullptr) {
      throw refuse(fmt::format("the kind \"{}\" (the kinds are induction and needles)", shown(std::string(kind))));
    }
    if (*given) throw refuse(fmt::format("{} given twice", kind));
    *given = true;
    std::int64_t& count = kind == "induction" ? budget.induction : budget.needles;
    if (!probe_count(item.substr(equals + 1), count)) {
      throw refuse(fmt::format("\"{}\" for {}", shown(std::string(item.substr(equals + 1))), kind));
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return budget;
}

void check_path_option(const std::string& what, const std::string& path) {
  std::size_t longest_name = 0;
  for (std::size_t begin = 0; begin <= path.size();) {
    const std::size_t slash = std::min(path.find('/', begin), path.size());
    longest_name = std::max(longest_name, slash - begin);
    begin = slash + 1;
  }
  if (path.size() < PATH_MAX && longest_name <= NAME_MAX) return;
  throw InputError(fmt::format("{} {}: expected a path, found {} bytes{}, more than any path can hold (at most {} "
                               "bytes, a name at most {}); check what was given",
                               what, shown_path(path), path.size(),
                               longest_name > NAME_MAX ? fmt::format(" with a name of {} bytes", longest_name) : "",
                               PATH_MAX - 1, NAME_MAX));
}

ShardOption parse_shard_option(const std::string& text) {
  const std::size_t slash = text.find('/');
  ShardOption shard;
  const std::string_view whole(text);
  const bool parsed = slash != std::string::npos && decimal_number(whole.substr(0, slash), shard.index) &&
                      decimal_number(whole.substr(slash + 1), shard.count);
  if (!parsed || shard.count < 1 || shard.count > kMaxShards) {
    throw InputError(fmt::format("--shard {}: expected I/N, the shard's index from 0 and the number of shards (1 to "
                                 "{}), e.g. --shard 0/8 or --shard ${{SLURM_ARRAY_TASK_ID}}/${{SLURM_ARRAY_TASK_COUNT}}",
                                 shown(text), kMaxShards));
  }
  if (shard.index >= shard.count) {
    throw InputError(fmt::format("--shard {}: the index must be below the number of shards: shards of {} are numbered "
                                 "0 to {}",
                                 shown(text), shard.count, shard.count - 1));
  }
  return shard;
}

std::vector<std::int64_t> parse_steps_option(const std::string& text) {
  // Given empty ("--steps ''", as an unset shell variable gives): an error, not the default.
  if (text.empty()) {
    throw InputError("--steps is empty; give the training step of each run, e.g. --steps 0,500,1000, or leave the "
                     "option out to order the runs by their headscan.json");
  }
  std::vector<std::int64_t> steps;
  std::string_view rest(text);
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    std::int64_t step = 0;
    if (!decimal_number(item, step) || step > kMaxMetadataStep) {
      throw InputError(fmt::format("--steps {}: expected the training step of each run, in the order the runs are "
                                   "given: whole numbers from 0 to 2^53 separated by commas, e.g. --steps 0,500,1000; "
                                   "found \"{}\"",
                                   shown(text), shown(std::string(item))));
    }
    steps.push_back(step);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return steps;
}

}  // namespace headscan
