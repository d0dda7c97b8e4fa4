#include "analyzer/model/exported/pt2_archive.h"

#include <algorithm>
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

// Records of a program named NAME ("model", "attention"): torch.export's archive spec
// (torch/csrc/export/pt2_archive_constants.h).
std::string program_record(const std::string& name) { return fmt::format("models/{}.json", name); }
std::string weights_config(const std::string& name) { return fmt::format("data/weights/{}_weights_config.json", name); }
std::string constants_config(const std::string& name) {
  return fmt::format("data/constants/{}_constants_config.json", name);
}
// Records that hold no tensor and no program: archive_format, version, byteorder, the example
// inputs' pickles (a few rows of token ids). Real ones are a few kB.
constexpr std::uint64_t kMaxOtherRecordBytes = 16ull << 20;
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

// A serialized device, {"type": "cuda", "index": 0}, as LibTorch names it ("cuda:0", "cpu"); empty
// when it is not a CPU or CUDA device with an index from 0 to kMaxDeviceIndex (or none).
constexpr int kMaxDeviceIndex = 1023;
std::string device_name(const nlohmann::json& device) {
  if (!device.is_object()) return "";
  const auto type = device.find("type");
  if (type == device.end() || !type->is_string() || (*type != "cpu" && *type != "cuda")) return "";
  const auto index = device.find("index");
  if (index == device.end() || index->is_null()) return type->get<std::string>();
  if (!index->is_number_integer() || index->get<std::int64_t>() < 0 || index->get<std::int64_t>() > kMaxDeviceIndex) {
    return "";
  }
  return fmt::format("{}:{}", type->get<std::string>(), index->get<std::int64_t>());
}

// The bytes of a tensor record its tensors read, and the tensor that reads the most.
struct RecordNeed {
  std::uint64_t bytes = 0;
  std::string tensor;
};

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

  // The entry of each weight or constant, by name: {"config": {name: {"path_name", "use_pickle",
  // "tensor_meta"}}}.
  std::map<std::string, nlohmann::json> payload(const std::string& record) const {
    const nlohmann::json document = read_json(record);
    const auto config = document.find("config");
    if (config == document.end() || !config->is_object()) damaged(record, "has no \"config\" object");
    std::map<std::string, nlohmann::json> entries;
    for (const auto& [name, entry] : config->items()) {
      const auto path = entry.find("path_name");
      if (!entry.is_object() || path == entry.end() || !path->is_string()) {
        damaged(record, fmt::format("gives no path_name for {}", quote_json(name)));
      }
      if (entry.value("use_pickle", false)) {
        throw InputError(fmt::format("{}: record {}: {} is stored pickled, which headscan does not read; {}",
                                     zip_.path(), record, quote_json(name), kExportProgramAgain));
      }
      entries[name] = entry;
    }
    return entries;
  }

  // The bytes a view of `meta` (a serialized TensorMeta: dtype, sizes, strides, storage_offset)
  // reads from the start of its record.
  std::uint64_t storage_bytes(const nlohmann::json& meta, const std::string& name, const std::string& record) const {
    const std::optional<std::uint64_t> size_of = itemsize(meta.value("dtype", std::int64_t{0}));
    if (!size_of) damaged(record, fmt::format("gives {} an unknown dtype", quote_json(name)));
    const nlohmann::json& sizes = meta.at("sizes");
    const nlohmann::json& strides = meta.at("strides");
    if (!sizes.is_array() || !strides.is_array() || sizes.size() != strides.size()) {
      damaged(record, fmt::format("gives {} sizes and strides of different ranks", quote_json(name)));
    }
    auto whole = [](const nlohmann::json& value) -> std::optional<std::int64_t> {
      const nlohmann::json* number = value.is_object() && value.contains("as_int") ? &value["as_int"] : nullptr;
      if (number == nullptr || !number->is_number_integer()) return std::nullopt;
      const std::int64_t n = number->get<std::int64_t>();
      if (n < 0 || n > kMaxDimension) return std::nullopt;
      return n;
    };
    std::uint64_t last = 0;  // the offset of the last element, in elements
    if (meta.contains("storage_offset")) {
      const std::optional<std::int64_t> offset = whole(meta.at("storage_offset"));
      if (!offset) damaged(record, fmt::format("gives {} a storage offset that is not a whole number from 0 to 2^40",
                                               quote_json(name)));
      last = static_cast<std::uint64_t>(*offset);
    }
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const std::optional<std::int64_t> size = whole(sizes[i]);
      const std::optional<std::int64_t> stride = whole(strides[i]);
      if (!size || !stride) {
        damaged(record, fmt::format("gives {} a size or stride that is not a whole number from 0 to 2^40",
                                    quote_json(name)));
      }
      if (*size == 0) return 0;
      last += static_cast<std::uint64_t>(*size - 1) * static_cast<std::uint64_t>(*stride);
      if (last > kMaxTensorBytes) damaged(record, fmt::format("gives {} more than 2^50 elements", quote_json(name)));
    }
    return (last + 1) * *size_of;
  }

  // The record that holds a weight or constant the program names, and the bytes the program and
  // the loader (the config's own tensor_meta) read of it: `needed` keeps the most per record.
  void need_tensor(const nlohmann::json& meta, const std::string& name, const std::string& folder,
                   const std::map<std::string, nlohmann::json>& entries, const std::string& config,
                   const std::string& program, std::map<std::string, RecordNeed>& needed) const {
    const auto entry = entries.find(name);
    if (entry == entries.end()) damaged(config, fmt::format("does not list {}, which the program uses", quote_json(name)));
    const std::string record = folder + entry->second.at("path_name").get<std::string>();
    if (!zip_.has(record)) damaged(record, fmt::format("(the data of {}) is missing", quote_json(name)));
    std::uint64_t bytes = storage_bytes(meta, name, program);
    if (const auto loader_meta = entry->second.find("tensor_meta");
        loader_meta != entry->second.end() && loader_meta->is_object()) {
      bytes = std::max(bytes, storage_bytes(*loader_meta, name, config));
      if (loader_meta->contains("device") && device_name(loader_meta->at("device")).empty()) {
        damaged(config, fmt::format("places {} on device {}, which is neither \"cpu\" nor \"cuda\" with an index "
                                    "from 0 to {}",
                                    quote_json(name), quote_json(loader_meta->at("device")), kMaxDeviceIndex));
      }
    }
    RecordNeed& most = needed[record];
    if (bytes >= most.bytes) most = RecordNeed{bytes, name};
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

// NativeRT parses every device the program names, of a tensor ("device") or an argument
// ("as_device"); LibTorch aborts the load on a type it does not know, and a negative index fails
// only when the node runs.
void check_devices(const nlohmann::json& value, const ProgramReader& reader, const std::string& record) {
  if (value.is_array()) {
    for (const nlohmann::json& item : value) check_devices(item, reader, record);
    return;
  }
  if (!value.is_object()) return;
  for (const auto& [key, item] : value.items()) {
    if ((key == "device" || key == "as_device") && !item.is_null() && device_name(item).empty()) {
      reader.damaged(record, fmt::format("names the device {}, which is neither \"cpu\" nor \"cuda\" with an index "
                                         "from 0 to {}",
                                         quote_json(item), kMaxDeviceIndex));
    }
    check_devices(item, reader, record);
  }
}

// The program `name` of the archive: its inputs, observers, operators, weights' dtype and device;
// the bytes each of its tensor records must hold go into `needed`.
ExportedProgramInfo check_program(const ModelZip& zip, const ProgramReader& reader, const std::string& name,
                                  std::map<std::string, RecordNeed>& needed) {
  const std::string record = program_record(name);
  const nlohmann::json program = reader.read_json(record);
  ExportedProgramInfo info;
  try {
    const nlohmann::json& module = program.at("graph_module");
    const nlohmann::json& graph = module.at("graph");
    const nlohmann::json& values = graph.at("tensor_values");
    const std::string weights_record = weights_config(name);
    const std::string constants_record = constants_config(name);
    const std::map<std::string, nlohmann::json> weights = reader.payload(weights_record);
    const std::map<std::string, nlohmann::json> constants =
        zip.has(constants_record) ? reader.payload(constants_record) : std::map<std::string, nlohmann::json>{};
    std::map<std::string, std::uint64_t> elements;  // floating-point parameter elements by dtype
    for (const nlohmann::json& spec : module.at("signature").at("input_specs")) {
      if (!spec.is_object() || spec.size() != 1) reader.damaged(record, "has an input spec that is not one entry");
      // The entry's key and value read through an iterator of `spec` (a structured binding of
      // *spec.items().begin() would refer into a temporary).
      const std::string kind = spec.begin().key();
      const nlohmann::json& entry = spec.begin().value();
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
      const std::string tensor = entry.at(name_field).get<std::string>();
      const nlohmann::json& meta = values.at(argument);
      const bool constant = kind == "tensor_constant" || (kind == "buffer" && !entry.value("persistent", true));
      if (constant) {
        reader.need_tensor(meta, tensor, "data/constants/", constants, constants_record, record, needed);
      } else {
        reader.need_tensor(meta, tensor, "data/weights/", weights, weights_record, record, needed);
      }
      if (kind != "parameter") continue;
      const std::string dtype = dtype_name(meta.value("dtype", std::int64_t{0}));
      std::uint64_t numel = 1;
      for (const nlohmann::json& size : meta.at("sizes")) numel *= size.at("as_int").get<std::uint64_t>();
      if (!dtype.empty()) elements[dtype] += numel;
      if (info.device.empty() && meta.contains("device")) info.device = device_name(meta.at("device"));
    }
    check_devices(program, reader, record);
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
      if (op == "headscan::attention.default" || op == "headscan::attention.windowed") ++info.attention;
      operators.insert(op);
    }
    info.operators.assign(operators.begin(), operators.end());
  } catch (const nlohmann::json::exception& e) {
    reader.damaged(record, fmt::format("lacks a field the program needs ({})", e.what()));
  }
  return info;
}

// NativeRT reads every record it loads whole, at the size the zip says it holds once inflated
// (a deflated record of zeros inflates a thousandfold): a tensor record must hold exactly the bytes
// its tensors read, and every other record stays within its own bound, so that the archive's
// inflated size is its tensors' plus a bounded rest.
void check_record_sizes(const ModelZip& zip, const ProgramReader& reader,
                        const std::map<std::string, RecordNeed>& needed) {
  for (const auto& [record, need] : needed) {
    const std::uint64_t held = zip.size(record);
    if (held != need.bytes) {
      reader.damaged(record, fmt::format("holds {} bytes once inflated, but {} reads {}{}", held,
                                         quote_json(need.tensor), need.bytes,
                                         held > need.bytes ? " (NativeRT would inflate all of it)" : ""));
    }
  }
  for (const std::string& record : zip.names("")) {
    if (needed.count(record) != 0) continue;
    const bool program = record.rfind("models/", 0) == 0 || record.rfind("data/weights/", 0) == 0 ||
                         record.rfind("data/constants/", 0) == 0;
    const std::uint64_t limit = record == "extra/tokenizer.json" ? kMaxTokenizerBytes
                                : record == "extra/headscan.json" ? kMaxMetadataBytes
                                : program                        ? kMaxProgramBytes
                                                                 : kMaxOtherRecordBytes;
    if (zip.size(record) > limit) {
      reader.damaged(record, fmt::format("holds {} bytes once inflated, more than {} (no tensor of the program is "
                                         "stored there)",
                                         zip.size(record), limit));
    }
  }
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
  std::map<std::string, RecordNeed> needed;  // tensor record → the bytes read of it
  ExportedProgramInfo info = check_program(zip, reader, "model", needed);
  if (zip.has(program_record(kAttentionProgram))) {
    const ExportedProgramInfo cut = check_program(zip, reader, kAttentionProgram, needed);
    const std::string record = program_record(kAttentionProgram);
    if (cut.inputs != info.inputs || cut.observers != info.observers || cut.attention != info.attention) {
      reader.damaged(record, fmt::format("is not the model's program cut after its attention: it takes ({}) and "
                                         "observes {} attention map(s), where the model's takes ({}) and observes {}",
                                         fmt::join(cut.inputs, ", "), cut.observers + cut.attention,
                                         fmt::join(info.inputs, ", "), info.observers + info.attention));
    }
    info.attention_program = true;
  }
  check_record_sizes(zip, reader, needed);
  return info;
}

}  // namespace headscan
