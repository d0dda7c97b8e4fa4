#include "analyzer/run/shard_state.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "analyzer/errors.h"
#include "analyzer/json_limits.h"

namespace headscan {
namespace {

constexpr std::uint64_t kMaxLayersOrHeads = 1 << 16;
constexpr std::size_t kMaxStateBytes = std::size_t{1} << 30;

// Reads fields of one state file, throwing InputError that names the file and the field.
class Fields {
 public:
  explicit Fields(const std::string& where) : where_(where) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("{}: not a usable shard state ({}); run the shard again, or give the directory a "
                                 "`headscan MODEL CORPUS --shard I/N -o DIR` run wrote",
                                 where_, what));
  }

  const nlohmann::ordered_json& get(const nlohmann::ordered_json& object, const char* key, const char* path) const {
    if (!object.is_object()) fail(fmt::format("{} is not an object", path));
    const auto found = object.find(key);
    if (found == object.end()) fail(fmt::format("{} has no \"{}\"", path, key));
    return *found;
  }
  const nlohmann::ordered_json& object(const nlohmann::ordered_json& parent, const char* key, const char* path) const {
    const auto& value = get(parent, key, path);
    if (!value.is_object()) fail(fmt::format("{}.{} is not an object", path, key));
    return value;
  }
  const nlohmann::ordered_json& array(const nlohmann::ordered_json& parent, const char* key, const char* path) const {
    const auto& value = get(parent, key, path);
    if (!value.is_array()) fail(fmt::format("{}.{} is not an array", path, key));
    return value;
  }
  std::string string(const nlohmann::ordered_json& parent, const char* key, const char* path) const {
    const auto& value = get(parent, key, path);
    if (!value.is_string()) fail(fmt::format("{}.{} is not a string", path, key));
    return value.get<std::string>();
  }
  std::uint64_t count(const nlohmann::ordered_json& parent, const char* key, const char* path,
                      std::uint64_t maximum = INT64_MAX) const {
    const auto& value = get(parent, key, path);
    if (!value.is_number_unsigned() || value.get<std::uint64_t>() > maximum) {
      fail(fmt::format("{}.{} is not a whole number from 0 to {}", path, key, maximum));
    }
    return value.get<std::uint64_t>();
  }
  double number(const nlohmann::ordered_json& parent, const char* key, const char* path) const {
    const auto& value = get(parent, key, path);
    if (!value.is_number()) fail(fmt::format("{}.{} is not a number", path, key));
    return value.get<double>();
  }
  bool boolean(const nlohmann::ordered_json& parent, const char* key, const char* path) const {
    const auto& value = get(parent, key, path);
    if (!value.is_boolean()) fail(fmt::format("{}.{} is not true or false", path, key));
    return value.get<bool>();
  }

 private:
  const std::string& where_;
};

std::vector<SavedExample> parse_examples(const Fields& fields, const nlohmann::ordered_json& list, const char* path,
                                         std::uint64_t layers, std::uint64_t heads, std::uint64_t floats) {
  std::vector<SavedExample> examples;
  for (const auto& item : list) {
    SavedExample example;
    const auto& key = fields.get(item, "key", path);
    if (!key.is_array() || key.size() != 2 || !key[0].is_number_unsigned() || !key[1].is_number_unsigned()) {
      fields.fail(fmt::format("{}[].key is not two whole numbers", path));
    }
    example.key = {key[0].get<std::uint64_t>(), key[1].get<std::uint64_t>()};
    example.source = fields.string(item, "source", path);
    const auto& tokens = fields.array(item, "tokens", path);
    const auto& special = fields.array(item, "special", path);
    if (tokens.empty() || tokens.size() > kMaxSavedExampleTokens || special.size() != tokens.size()) {
      fields.fail(fmt::format("{}[] has {} tokens and {} special flags (1 to {} of each expected)", path,
                              tokens.size(), special.size(), kMaxSavedExampleTokens));
    }
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (!tokens[i].is_string() || !special[i].is_boolean()) fields.fail(fmt::format("{}[] has a malformed token", path));
      example.tokens.push_back(tokens[i].get<std::string>());
      example.special.push_back(special[i].get<bool>());
    }
    example.offset = fields.count(item, "offset", path);
    const std::uint64_t size = layers * heads * tokens.size() * tokens.size();
    if (example.offset > floats || floats - example.offset < size) {
      fields.fail(fmt::format("{}[] lies outside examples.bin ({} floats)", path, floats));
    }
    examples.push_back(std::move(example));
  }
  return examples;
}

ShardCounts parse_counts(const Fields& fields, const nlohmann::ordered_json& counts) {
  const char* path = "counts";
  // At most 2^42 each, so that a million shards add up without overflow.
  auto count = [&](const char* key) {
    return static_cast<std::int64_t>(fields.count(counts, key, path, std::uint64_t{1} << 42));
  };
  ShardCounts parsed;
  parsed.lines = count("lines");
  parsed.documents = count("documents");
  parsed.sequences = count("sequences");
  parsed.tokens = count("tokens");
  parsed.lines_with_invalid_utf8 = count("lines_with_invalid_utf8");
  parsed.invalid_utf8_replacements = count("invalid_utf8_replacements");
  parsed.sentences = count("sentences");
  parsed.parsed_sentences = count("parsed_sentences");
  return parsed;
}

// A value of a state for a message (quote_json takes nlohmann::json, states are ordered_json).
std::string quoted(const nlohmann::ordered_json& value) { return quote_json(nlohmann::json::parse(value.dump()), 120); }

// The first key where two "agree" sections differ, with both values, quoted.
std::string first_difference(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b) {
  for (const auto& [key, value] : a.items()) {
    if (!b.contains(key)) return fmt::format("{}: {} against nothing", key, quoted(value));
    if (b.at(key) != value) return fmt::format("{}: {} against {}", key, quoted(value), quoted(b.at(key)));
  }
  for (const auto& [key, value] : b.items()) {
    if (!a.contains(key)) return fmt::format("{}: nothing against {}", key, quoted(value));
  }
  return {};
}

}  // namespace

void ShardCounts::add(const ShardCounts& other) {
  lines += other.lines;
  documents += other.documents;
  sequences += other.sequences;
  tokens += other.tokens;
  lines_with_invalid_utf8 += other.lines_with_invalid_utf8;
  invalid_utf8_replacements += other.invalid_utf8_replacements;
  sentences += other.sentences;
  parsed_sentences += other.parsed_sentences;
}

nlohmann::ordered_json counts_json(const ShardCounts& counts) {
  return {{"lines", counts.lines},
          {"documents", counts.documents},
          {"sequences", counts.sequences},
          {"tokens", counts.tokens},
          {"lines_with_invalid_utf8", counts.lines_with_invalid_utf8},
          {"invalid_utf8_replacements", counts.invalid_utf8_replacements},
          {"sentences", counts.sentences},
          {"parsed_sentences", counts.parsed_sentences}};
}

nlohmann::ordered_json saved_example_json(const SavedExample& example) {
  return {{"key", {example.key.first, example.key.second}},
          {"source", example.source},
          {"tokens", example.tokens},
          {"special", example.special},
          {"offset", example.offset}};
}

ShardState parse_shard_state(const std::string& text, const std::string& where) {
  const Fields fields(where);
  check_json_depth(text, where);
  const nlohmann::ordered_json root = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) fields.fail("it is not JSON: damaged or cut short");
  if (!root.is_object() || !root.contains("format") || root.at("format") != kShardStateFormat) {
    fields.fail(fmt::format("no \"format\": \"{}\"", kShardStateFormat));
  }
  if (!root.contains("version") || root.at("version") != kShardStateVersion) {
    throw InputError(fmt::format("{}: shard state version {} cannot be merged by headscan {} (it reads version {}); "
                                 "merge with the headscan version that ran the shards, or run them again",
                                 where, root.contains("version") ? quoted(root.at("version")) : "none",
                                 HEADSCAN_VERSION, kShardStateVersion));
  }
  ShardState state;
  const auto& shard = fields.object(root, "shard", "state");
  state.count = fields.count(shard, "count", "shard", 1'000'000);
  state.index = fields.count(shard, "index", "shard", 1'000'000);
  if (state.count < 1 || state.index >= state.count) fields.fail("shard.index is not below shard.count");
  state.slice = fields.string(shard, "slice", "shard");
  state.agree = fields.object(root, "agree", "state");
  const auto& shape = fields.object(root, "shape", "state");
  const std::uint64_t layers = fields.count(shape, "layers", "shape", kMaxLayersOrHeads);
  const std::uint64_t heads = fields.count(shape, "heads", "shape", kMaxLayersOrHeads);
  if (layers == 0 || heads == 0) fields.fail("shape has no layers or heads");
  state.layers = static_cast<int>(layers);
  state.heads = static_cast<int>(heads);
  state.causal = fields.boolean(shape, "causal", "shape");
  state.counts = parse_counts(fields, fields.object(root, "counts", "state"));
  state.statistics = nlohmann::json::parse(fields.object(root, "statistics", "state").dump());
  state.document = fields.object(root, "document", "state");
  for (const char* section : {"model", "corpus", "probes", "thresholds"}) fields.object(state.document, section, "document");
  const auto& model = state.document.at("model");
  if (fields.count(model, "layers", "document.model") != layers || fields.count(model, "heads", "document.model") != heads) {
    fields.fail("document.model's layers and heads are not those of shape");
  }
  fields.array(state.document, "heads", "document");
  for (const auto& warning : fields.array(root, "warnings", "state")) {
    if (!warning.is_string()) fields.fail("warnings holds something other than text");
    state.warnings.push_back(warning.get<std::string>());
  }
  state.example_floats = fields.count(root, "example_floats", "state", std::uint64_t{1} << 40);
  state.examples = parse_examples(fields, fields.array(root, "examples", "state"), "examples", layers, heads,
                                  state.example_floats);
  state.probe_examples = parse_examples(fields, fields.array(root, "probe_examples", "state"), "probe_examples",
                                        layers, heads, state.example_floats);
  state.seconds = fields.number(root, "seconds", "state");
  for (const auto& [name, seconds] : fields.object(root, "phases", "state").items()) {
    if (!seconds.is_number()) fields.fail("phases holds something other than numbers");
    state.phases.emplace_back(name, seconds.get<double>());
  }
  return state;
}

ShardState read_shard_state(const std::string& directory) {
  namespace fs = std::filesystem;
  const fs::path path = fs::path(directory) / kShardStateFile;
  std::error_code error;
  if (!fs::is_directory(directory, error)) {
    throw InputError(fmt::format("{}: expected a shard's directory (written by headscan --shard I/N -o DIR), found {}",
                                 directory, fs::exists(directory, error) ? "a file" : "nothing at this path"));
  }
  if (!fs::is_regular_file(path, error)) {
    throw InputError(fmt::format("{}: no {} in this directory: it is not a shard's, or its shard has not finished; run "
                                 "the shard (headscan MODEL CORPUS --shard I/N -o {})",
                                 directory, kShardStateFile, directory));
  }
  const auto size = fs::file_size(path, error);
  if (error || size > kMaxStateBytes) {
    throw InputError(fmt::format("{}: larger than a shard state can be ({} bytes at most)", path.string(), kMaxStateBytes));
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw std::runtime_error(fmt::format("{}: cannot be read", path.string()));
  ShardState state = parse_shard_state(text.str(), path.string());
  state.directory = directory;
  if (!fs::is_regular_file(fs::path(directory) / "idf.txt", error)) {
    throw InputError(fmt::format("{}: no idf.txt in this shard's directory: it is damaged; run the shard again",
                                 directory));
  }
  const fs::path examples = fs::path(directory) / kShardExamplesFile;
  const auto example_bytes = fs::exists(examples, error) ? fs::file_size(examples, error) : 0;
  if (error || example_bytes != state.example_floats * sizeof(float)) {
    throw InputError(fmt::format("{}: expected {} bytes of example attention, found {}; the shard's directory is "
                                 "damaged: run the shard again",
                                 examples.string(), state.example_floats * sizeof(float), example_bytes));
  }
  return state;
}

std::vector<ShardState> order_shards(std::vector<ShardState> shards) {
  if (shards.empty()) throw InputError("no shard directories given: headscan merge DIR... -o OUT");
  const std::uint64_t count = shards.front().count;
  std::map<std::uint64_t, std::size_t> by_index;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const ShardState& shard = shards[i];
    if (shard.count != count) {
      throw InputError(fmt::format("{} is shard {}/{} but {} is shard {}/{}: every shard of one run has the same count",
                                   shard.directory, shard.index, shard.count, shards.front().directory,
                                   shards.front().index, count));
    }
    const auto [found, added] = by_index.emplace(shard.index, i);
    if (!added) {
      throw InputError(fmt::format("shard {}/{} is given twice: {} and {}; give each shard's directory once",
                                   shard.index, count, shards[found->second].directory, shard.directory));
    }
  }
  std::vector<std::uint64_t> missing;
  for (std::uint64_t index = 0; index < count && missing.size() < 10; ++index) {
    if (!by_index.count(index)) missing.push_back(index);
  }
  if (!missing.empty()) {
    throw InputError(fmt::format("shard(s) {} of {} are missing: a merge needs all {} shards of the run (given: {})",
                                 fmt::join(missing, ", "), count, count, shards.size()));
  }
  std::vector<ShardState> ordered;
  for (const auto& [index, position] : by_index) ordered.push_back(std::move(shards[position]));
  for (const ShardState& shard : ordered) {
    std::string difference = first_difference(ordered.front().agree, shard.agree);
    const ShardState& first = ordered.front();
    if (difference.empty() && (shard.layers != first.layers || shard.heads != first.heads || shard.causal != first.causal)) {
      difference = fmt::format("shape: {} layers x {} heads against {} x {}", shard.layers, shard.heads, first.layers,
                               first.heads);
    }
    if (!difference.empty()) {
      throw InputError(fmt::format("{} (shard {}) and {} (shard 0) come from different runs: {}; merge the shards of "
                                   "one run, with the same model, tokenizer, corpus and options",
                                   shard.directory, shard.index, ordered.front().directory, difference));
    }
  }
  return ordered;
}

}  // namespace headscan
