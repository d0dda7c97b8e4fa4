#include "analyzer/model/exported/pt2_archive.h"

#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/json_limits.h"
#include "analyzer/model/model_metadata.h"

namespace headscan {
namespace {

constexpr const char* kModelRecord = "models/model.json";
constexpr const char* kWeightsConfig = "data/weights/model_weights_config.json";
constexpr const char* kConstantsConfig = "data/constants/model_constants_config.json";
constexpr std::int64_t kMaxDimension = std::int64_t{1} << 40;  // a size or stride; real ones are far below
constexpr std::uint64_t kMaxTensorBytes = std::uint64_t{1} << 50;

// Bytes per element of torch.export's serialized ScalarType (torch/_export/serde/schema.py).
std::optional<std::uint64_t> itemsize(std::int64_t dtype) {
  static const std::map<std::int64_t, std::uint64_t> kSizes = {
      {1, 1}, {2, 1}, {3, 2}, {4, 4}, {5, 8}, {6, 2}, {7, 4}, {8, 8}, {9, 4}, {10, 8}, {11, 16},
      {12, 1}, {13, 2}, {28, 2}, {29, 1}, {30, 1}, {31, 1}, {32, 1}};
  const auto found = kSizes.find(dtype);
  if (found == kSizes.end()) return std::nullopt;
  return found->second;
}

std::string dtype_name(std::int64_t dtype) {
  switch (dtype) {
    case 6: return "float16";
    case 7: return "float32";
    case 8: return "float64";
    case 13: return "bfloat16";
    default: return "";
  }
}

class ProgramReader {
 public:
  explicit ProgramReader(const ModelZip& zip) : zip_(zip) {}

  [[noreturn]] void damaged(const std::string& record, const std::string& what) const {
    throw InputError(fmt::format("{}: record {} {}: the archive is damaged or was not written by torch.export; {}",
                                 zip_.path(), record, what, kExportProgramAgain));
  }

  nlohmann::json read_json(const std::string& record) const {
    if (!zip_.has(record)) {
      throw InputError(fmt::format("{}: expected {}, found a .pt2 archive without {}; {}", zip_.path(),
                                   kExportedExpected, record, kExportProgramAgain));
    }
    const std::string text = zip_.read(record, kMaxProgramBytes);
    const std::string origin = fmt::format("{}: record {}", zip_.path(), record);
    check_json_depth(text, origin);
    nlohmann::json document = nlohmann::json::parse(text, nullptr, false);
    if (document.is_discarded() || !document.is_object()) damaged(record, "is not a JSON object");
    return document;
  }

  // The record of each weight or constant, by name: {"config": {name: {"path_name", "use_pickle"}}}.
  std::map<std::string, std::string> payload(const std::string& record) const {
    const nlohmann::json document = read_json(record);
    const auto config = document.find("config");
    if (config == document.end() || !config->is_object()) damaged(record, "has no \"config\" object");
    std::map<std::string, std::string> paths;
    for (const auto& [name, entry] : config->items()) {
      const auto path = entry.find("path_name");
      if (!entry.is_object() || path == entry.end() || !path->is_string()) {
        damaged(record, fmt::format("gives no path_name for {}", quote_json(name)));
      }
      if (entry.value("use_pickle", false)) {
        throw InputError(fmt::format("{}: record {}: {} is stored pickled, which headscan does not read; {}",
                                     zip_.path(), record, quote_json(name), kExportProgramAgain));
      }
      paths[name] = path->get<std::string>();
    }
    return paths;
  }

  // The bytes NativeRT reads for a tensor of `meta` (model.json's tensor_values entry).
  std::uint64_t storage_bytes(const nlohmann::json& meta, const std::string& name) const {
    const std::optional<std::uint64_t> size_of = itemsize(meta.value("dtype", std::int64_t{0}));
    if (!size_of) damaged(kModelRecord, fmt::format("gives {} an unknown dtype", quote_json(name)));
    const nlohmann::json& sizes = meta.at("sizes");
    const nlohmann::json& strides = meta.at("strides");
    if (!sizes.is_array() || !strides.is_array() || sizes.size() != strides.size()) {
      damaged(kModelRecord, fmt::format("gives {} sizes and strides of different ranks", quote_json(name)));
    }
    std::uint64_t last = 0;  // the offset of the last element, in elements
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const nlohmann::json* size = sizes[i].is_object() && sizes[i].contains("as_int") ? &sizes[i]["as_int"] : nullptr;
      const nlohmann::json* stride =
          strides[i].is_object() && strides[i].contains("as_int") ? &strides[i]["as_int"] : nullptr;
      if (size == nullptr || stride == nullptr || !size->is_number_integer() || !stride->is_number_integer() ||
          size->get<std::int64_t>() < 0 || stride->get<std::int64_t>() < 0 ||
          size->get<std::int64_t>() > kMaxDimension || stride->get<std::int64_t>() > kMaxDimension) {
        damaged(kModelRecord, fmt::format("gives {} a size or stride that is not a whole number from 0 to 2^40",
                                          quote_json(name)));
      }
      if (size->get<std::int64_t>() == 0) return 0;
      last += static_cast<std::uint64_t>(size->get<std::int64_t>() - 1) * static_cast<std::uint64_t>(stride->get<std::int64_t>());
      if (last > kMaxTensorBytes) damaged(kModelRecord, fmt::format("gives {} more than 2^50 elements", quote_json(name)));
    }
    return (last + 1) * *size_of;
  }

  // Every weight and constant the program names has a record that holds its bytes.
  void check_tensor(const nlohmann::json& meta, const std::string& name, const std::string& folder,
                    const std::map<std::string, std::string>& paths, const std::string& config) const {
    const auto path = paths.find(name);
    if (path == paths.end()) damaged(config, fmt::format("does not list {}, which the program uses", quote_json(name)));
    const std::string record = folder + path->second;
    if (!zip_.has(record)) damaged(record, fmt::format("(the data of {}) is missing", quote_json(name)));
    const std::uint64_t needed = storage_bytes(meta, name);
    const std::uint64_t held = zip_.size(record);
    if (held == 0 && needed > 0) {
      damaged(record, fmt::format("holds no bytes for {}, which needs {}", quote_json(name), needed));
    }
    if (held < needed) {
      damaged(record, fmt::format("holds {} bytes, but {} needs {}", held, quote_json(name), needed));
    }
  }

 private:
  const ModelZip& zip_;
};

// "torch.ops.aten.softmax.int" → "aten::softmax.int"; "torch.ops.headscan.observe.default" →
// "headscan::observe.default". Empty for Python callables (operator.getitem).
std::string operator_name(const std::string& target) {
  constexpr std::string_view kPrefix = "torch.ops.";
  if (target.rfind(kPrefix, 0) != 0) return "";
  const std::string rest = target.substr(kPrefix.size());
  const std::size_t dot = rest.find('.');
  if (dot == std::string::npos) return "";
  return rest.substr(0, dot) + "::" + rest.substr(dot + 1);
}

}  // namespace

bool is_pt2_archive(const ModelZip& zip) {
  if (!zip.has("archive_format") || zip.size("archive_format") > 64) return false;
  std::string format = zip.read("archive_format", 64);
  while (!format.empty() && (format.back() == '\n' || format.back() == ' ')) format.pop_back();
  return format == "pt2";
}

ExportedProgramInfo check_pt2_archive(const ModelZip& zip) {
  const ProgramReader reader(zip);
  if (zip.size("extra/headscan.json") > kMaxMetadataBytes) zip.read("extra/headscan.json", kMaxMetadataBytes);
  if (zip.size("extra/tokenizer.json") > kMaxTokenizerBytes) zip.read("extra/tokenizer.json", kMaxTokenizerBytes);
  const nlohmann::json program = reader.read_json(kModelRecord);
  ExportedProgramInfo info;
  try {
    const nlohmann::json& module = program.at("graph_module");
    const nlohmann::json& graph = module.at("graph");
    const nlohmann::json& values = graph.at("tensor_values");
    const std::map<std::string, std::string> weights = reader.payload(kWeightsConfig);
    const std::map<std::string, std::string> constants =
        zip.has(kConstantsConfig) ? reader.payload(kConstantsConfig) : std::map<std::string, std::string>{};
    std::map<std::string, std::uint64_t> elements;  // floating-point parameter elements by dtype
    for (const nlohmann::json& spec : module.at("signature").at("input_specs")) {
      if (!spec.is_object() || spec.size() != 1) reader.damaged(kModelRecord, "has an input spec that is not one entry");
      const auto& [kind, entry] = *spec.items().begin();
      if (kind == "user_input") {
        const nlohmann::json& argument = entry.at("arg");
        if (!argument.contains("as_tensor")) {
          throw InputError(fmt::format("{}: the program takes {} besides tensors; headscan calls it with int64 "
                                       "[batch, tokens] token ids (and an attention mask): export a module whose "
                                       "forward takes those",
                                       zip.path(), quote_json(argument)));
        }
        info.inputs.push_back(argument.at("as_tensor").at("name").get<std::string>());
        continue;
      }
      const char* name_field = kind == "parameter"        ? "parameter_name"
                               : kind == "buffer"         ? "buffer_name"
                               : kind == "tensor_constant" ? "tensor_constant_name"
                                                          : nullptr;
      if (name_field == nullptr) continue;  // tokens, custom objects, constant inputs: no tensor record
      const std::string argument = entry.at("arg").at("name").get<std::string>();
      const std::string name = entry.at(name_field).get<std::string>();
      const nlohmann::json& meta = values.at(argument);
      const bool constant = kind == "tensor_constant" || (kind == "buffer" && !entry.value("persistent", true));
      if (constant) {
        reader.check_tensor(meta, name, "data/constants/", constants, kConstantsConfig);
      } else {
        reader.check_tensor(meta, name, "data/weights/", weights, kWeightsConfig);
      }
      if (kind != "parameter") continue;
      const std::string dtype = dtype_name(meta.value("dtype", std::int64_t{0}));
      std::uint64_t numel = 1;
      for (const nlohmann::json& size : meta.at("sizes")) numel *= size.at("as_int").get<std::uint64_t>();
      if (!dtype.empty()) elements[dtype] += numel;
      if (info.device.empty() && meta.contains("device")) {
        const nlohmann::json& device = meta.at("device");
        info.device = device.at("type").get<std::string>();
        if (device.contains("index") && device.at("index").is_number_integer()) {
          info.device += fmt::format(":{}", device.at("index").get<int>());
        }
      }
    }
    info.dtype = "float32";
    std::uint64_t most = 0;
    for (const auto& [dtype, count] : elements) {
      if (count > most) std::tie(info.dtype, most) = std::make_pair(dtype, count);
    }
    if (info.device.empty()) info.device = "cpu";
    std::set<std::string> operators;
    for (const nlohmann::json& node : graph.at("nodes")) {
      const std::string op = operator_name(node.at("target").get<std::string>());
      if (op.empty()) continue;
      if (op == "headscan::observe.default") ++info.observers;
      if (op == "headscan::attention.default") ++info.attention;
      operators.insert(op);
    }
    info.operators.assign(operators.begin(), operators.end());
  } catch (const nlohmann::json::exception& e) {
    reader.damaged(kModelRecord, fmt::format("lacks a field the program needs ({})", e.what()));
  }
  return info;
}

}  // namespace headscan
