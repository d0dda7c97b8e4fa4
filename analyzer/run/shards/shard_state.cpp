// state.json parsed and checked as a whole (shard_state.h): its names, versions, shape, counts,
// statistics, document and example lists; and what a state's counts and examples are written as.
#include "analyzer/run/shards/shard_state.h"

#include <algorithm>
#include <initializer_list>

#include <fmt/format.h>

#include "analyzer/errors.h"
#include "analyzer/json_limits.h"
#include "analyzer/run/shards/shard_state_fields.h"
#include "heads/saved_statistics.h"
#include "reports/model_layers_json.h"

namespace headscan {
namespace {

using shard_fields::below;
using shard_fields::Fields;
using shard_fields::indexed;
using shard_fields::Json;
using shard_fields::quoted;

constexpr std::uint64_t kMaxLayersOrHeads = 1 << 16;
// Counts as saved statistics' (2^42), so that a million shards add up without overflow.
constexpr auto kMaxCount = static_cast<std::uint64_t>(kMaxSavedCount);
constexpr std::uint64_t kMaxProbes = 1 << 20;

constexpr std::initializer_list<const char*> kStateKeys = {
    "format",   "version",  "headscan_version", "shard",          "agree",          "shape",   "counts", "statistics",
    "document", "warnings", "examples",         "probe_examples", "example_floats", "seconds", "phases"};
// What every shard of one run shares (analyzer/run/shard_run.cpp, agreement()).
constexpr std::initializer_list<const char*> kAgreeKeys = {
    "headscan_version", "model",      "tokenizer",  "corpus",   "max_length", "dtype", "seed",  "probes",
    "batch_size",       "parser",     "text_field", "thresholds", "ablation", "idf",   "shape"};
constexpr std::initializer_list<const char*> kCountKeys = {
    "lines",  "documents", "sequences", "tokens", "lines_with_invalid_utf8", "invalid_utf8_replacements",
    "sentences", "parsed_sentences"};
// The phases of a shard's run: "load", "shape", then its passes (analyzer/run/passes/passes.cpp).
constexpr std::initializer_list<const char*> kPhases = {
    "load", "shape", "idf", "corpus", "probes", "needles", "ablation_set", "importance", "ablation", "pruning", "circuits", "kv_plan"};
constexpr std::initializer_list<const char*> kSlices = {"whole", "bytes", "documents"};

// `lists` (examples, then probe_examples) lie end to end in examples.bin as the shard wrote them:
// each at the offset where the one before ends, the last ending at the end of the file.
std::vector<SavedExample> parse_examples(const Fields& fields, const Json& list, const std::string& path,
                                         std::uint64_t layers, std::uint64_t heads, std::uint64_t floats,
                                         std::uint64_t& next_offset) {
  if (list.size() > kMaxSavedExamples) {
    fields.fail(fmt::format("{} holds {} examples, more than the {} a run keeps", path, list.size(), kMaxSavedExamples));
  }
  std::vector<SavedExample> examples;
  for (std::size_t index = 0; index < list.size(); ++index) {
    const Json& item = list[index];
    const std::string item_path = indexed(path, index);
    SavedExample example;
    const auto& key = fields.get(item, "key", item_path);
    fields.known(item, {"key", "source", "tokens", "special", "offset"}, item_path);
    if (!key.is_array() || key.size() != 2 || !key[0].is_number_unsigned() || !key[1].is_number_unsigned()) {
      fields.fail(fmt::format("{}.key is not two whole numbers", item_path));
    }
    example.key = {key[0].get<std::uint64_t>(), key[1].get<std::uint64_t>()};
    example.source = fields.string(item, "source", item_path);
    const auto& tokens = fields.array(item, "tokens", item_path);
    const auto& special = fields.array(item, "special", item_path);
    if (tokens.empty() || tokens.size() > kMaxSavedExampleTokens || special.size() != tokens.size()) {
      fields.fail(fmt::format("{} has {} tokens and {} special flags (1 to {} of each expected)", item_path,
                              tokens.size(), special.size(), kMaxSavedExampleTokens));
    }
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (!tokens[i].is_string() || !special[i].is_boolean()) fields.fail(fmt::format("{} has a malformed token", item_path));
      example.tokens.push_back(tokens[i].get<std::string>());
      example.special.push_back(special[i].get<bool>());
    }
    example.offset = fields.count(item, "offset", item_path);
    const std::uint64_t size = layers * heads * tokens.size() * tokens.size();
    if (example.offset != next_offset) {
      fields.fail(fmt::format("{}.offset is {}, expected {}: a shard writes its examples into examples.bin one after "
                              "another (examples, then probe_examples), each where the one before ends, so that no two "
                              "overlap",
                              item_path, example.offset, next_offset));
    }
    if (example.offset > floats || floats - example.offset < size) {
      fields.fail(fmt::format("{} ({} floats from {}) lies outside examples.bin ({} floats)", item_path, size,
                              example.offset, floats));
    }
    next_offset += size;
    examples.push_back(std::move(example));
  }
  return examples;
}

ShardCounts parse_counts(const Fields& fields, const Json& counts, std::int64_t max_length) {
  const std::string path = "counts";
  fields.known(counts, kCountKeys, path);
  auto count = [&](const char* key) { return static_cast<std::int64_t>(fields.count(counts, key, path, kMaxCount)); };
  ShardCounts parsed;
  parsed.lines = count("lines");
  parsed.documents = count("documents");
  parsed.sequences = count("sequences");
  parsed.tokens = count("tokens");
  parsed.lines_with_invalid_utf8 = count("lines_with_invalid_utf8");
  parsed.invalid_utf8_replacements = count("invalid_utf8_replacements");
  parsed.sentences = count("sentences");
  parsed.parsed_sentences = count("parsed_sentences");
  // tokens <= sequences * max_length, without overflow.
  if (parsed.tokens < parsed.sequences || (parsed.tokens + max_length - 1) / max_length > parsed.sequences) {
    fields.fail(fmt::format("counts.tokens is {} for {} sequences (counts.sequences): a sequence has 1 to {} tokens "
                            "(agree.max_length)",
                            parsed.tokens, parsed.sequences, max_length));
  }
  if (parsed.parsed_sentences > parsed.sentences) {
    fields.fail(fmt::format("counts.parsed_sentences is {}, more than the {} sentences (counts.sentences)",
                            parsed.parsed_sentences, parsed.sentences));
  }
  if (parsed.lines_with_invalid_utf8 > parsed.lines) {
    fields.fail(fmt::format("counts.lines_with_invalid_utf8 is {}, more than the {} lines (counts.lines)",
                            parsed.lines_with_invalid_utf8, parsed.lines));
  }
  return parsed;
}

// The settings every shard of the run shares: known names, this version, a window's length,
// thresholds that are numbers, the shape the state's.
void check_agree(const Fields& fields, const Json& agree, const Json& shape) {
  fields.known(agree, kAgreeKeys, "agree");
  fields.version(agree, "agree");
  for (const auto& [name, value] : fields.object(agree, "thresholds", "agree").items()) {
    if (!value.is_number()) {
      fields.fail(fmt::format("agree.thresholds.{} is {}, not a number", name, quoted(value)));
    }
  }
  if (fields.get(agree, "shape", "agree") != shape) {
    fields.fail(fmt::format("agree.shape is {} but shape is {}: they are the model's shape, written twice",
                            quoted(agree.at("shape")), quoted(shape)));
  }
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

StatisticLimits statistic_limits(const ShardState& state) {
  StatisticLimits limits;
  limits.layers = state.layers;
  limits.heads = state.heads;
  limits.causal = state.causal;
  // A query is a token of a sequence; the queries i >= 1 are not the first token of their sequence.
  limits.corpus_queries = {state.counts.tokens, "the shard's tokens (counts.tokens)"};
  limits.later_corpus_queries = {state.counts.tokens - state.counts.sequences,
                                 "the shard's tokens after the first of each sequence (counts.tokens - "
                                 "counts.sequences)"};
  limits.probe_queries = {state.probes * state.max_length,
                          "the tokens the shard's probe sequences can hold (document.probes.count x agree.max_length)"};
  limits.needle_queries = {state.needles * state.max_length,
                           "the tokens the shard's needle probes can hold (document.retrieval.probes x agree.max_length)"};
  limits.max_length = {state.max_length, "agree.max_length"};
  limits.parsed_sentences = {state.counts.parsed_sentences, "counts.parsed_sentences"};
  return limits;
}

ShardState parse_shard_state(const std::string& text, const std::string& where) {
  const Fields fields(where);
  check_json_depth(text, where);
  const Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
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
  fields.version(root, "");
  fields.known(root, kStateKeys, "");
  ShardState state;
  const auto& shard = fields.object(root, "shard", "");
  fields.known(shard, {"index", "count", "slice"}, "shard");
  state.count = fields.count(shard, "count", "shard", 1'000'000);
  state.index = fields.count(shard, "index", "shard", 1'000'000);
  if (state.count < 1 || state.index >= state.count) fields.fail("shard.index is not below shard.count");
  state.slice = fields.string(shard, "slice", "shard");
  if (std::none_of(kSlices.begin(), kSlices.end(), [&](const char* slice) { return state.slice == slice; })) {
    fields.fail(fmt::format("shard.slice is {}: expected {}", quoted(shard.at("slice")), fmt::join(kSlices, ", ")));
  }
  const auto& shape = fields.object(root, "shape", "");
  fields.known(shape, {"layers", "heads", "causal"}, "shape");
  const std::uint64_t layers = fields.count(shape, "layers", "shape", kMaxLayersOrHeads);
  const std::uint64_t heads = fields.count(shape, "heads", "shape", kMaxLayersOrHeads);
  if (layers == 0 || heads == 0) fields.fail("shape has no layers or heads");
  state.layers = static_cast<int>(layers);
  state.heads = static_cast<int>(heads);
  state.causal = fields.boolean(shape, "causal", "shape");
  state.agree = fields.object(root, "agree", "");
  check_agree(fields, state.agree, shape);
  state.max_length = static_cast<std::int64_t>(fields.count(state.agree, "max_length", "agree", kMaxSavedWindow));
  if (state.max_length < 2) fields.fail("agree.max_length is below 2: a window holds at least 2 tokens");
  state.counts = parse_counts(fields, fields.object(root, "counts", ""), state.max_length);

  state.document = fields.object(root, "document", "");
  fields.version(state.document, "document");
  for (const char* section : {"model", "corpus", "probes", "thresholds"}) fields.object(state.document, section, "document");
  const auto& model = state.document.at("model");
  DocumentLayers numbered = document_layers(model, where + ": document");
  state.layer_numbering = std::move(numbered.numbering);
  if (static_cast<std::uint64_t>(numbered.maps) != layers ||
      fields.count(model, "heads", "document.model") != heads) {
    fields.fail("document.model's layers and heads are not those of shape");
  }
  state.probes = static_cast<std::int64_t>(fields.count(state.document.at("probes"), "count", "document.probes", kMaxProbes));
  if (state.index != 0 && state.probes != 0) {
    fields.fail(fmt::format("document.probes.count is {} in shard {}: the probes run in shard 0 only", state.probes,
                            state.index));
  }
  if (state.document.contains("retrieval")) {
    const auto& retrieval = fields.object(state.document, "retrieval", "document");
    state.needles = static_cast<std::int64_t>(fields.count(retrieval, "probes", "document.retrieval", kMaxProbes));
  }
  if (state.index != 0 && state.needles != 0) {
    fields.fail(fmt::format("document.retrieval.probes is {} in shard {}: the needle probes run in shard 0 only",
                            state.needles, state.index));
  }
  fields.array(state.document, "heads", "document");

  state.statistics = nlohmann::json::parse(fields.object(root, "statistics", "").dump());
  try {
    check_saved_statistics(state.statistics, statistic_limits(state));
  } catch (const InputError& e) {
    fields.fail(e.what());
  }

  for (const auto& warning : fields.array(root, "warnings", "")) {
    if (!warning.is_string()) fields.fail("warnings holds something other than text");
    state.warnings.push_back(warning.get<std::string>());
  }
  state.example_floats = fields.count(root, "example_floats", "", std::uint64_t{1} << 40);
  std::uint64_t next_offset = 0;
  state.examples = parse_examples(fields, fields.array(root, "examples", ""), "examples", layers, heads,
                                  state.example_floats, next_offset);
  state.probe_examples = parse_examples(fields, fields.array(root, "probe_examples", ""), "probe_examples", layers,
                                        heads, state.example_floats, next_offset);
  if (next_offset != state.example_floats) {
    fields.fail(fmt::format("example_floats is {}, but the examples fill {} floats of examples.bin: a shard writes "
                            "only its examples there",
                            state.example_floats, next_offset));
  }
  state.seconds = fields.seconds(fields.get(root, "seconds", ""), "seconds");
  for (const auto& item : fields.object(root, "phases", "").items()) {
    const std::string& name = item.key();
    if (std::none_of(kPhases.begin(), kPhases.end(), [&](const char* phase) { return name == phase; })) {
      fields.fail(fmt::format("phases holds {}, a phase headscan {} does not know (it knows {})",
                              quote_json(nlohmann::json(name)), HEADSCAN_VERSION, fmt::join(kPhases, ", ")));
    }
    state.phases.emplace_back(name, fields.seconds(item.value(), below("phases", name)));
  }
  return state;
}

}  // namespace headscan
