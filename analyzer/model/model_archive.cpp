#include "analyzer/model/model_archive.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/model/torchscript_archive.h"

namespace headscan {
namespace {

bool starts_like_zip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char signature[4] = {};
  in.read(signature, sizeof signature);
  return in.gcount() == 4 && std::string(signature, 4) == std::string("PK\x03\x04", 4);
}

}  // namespace

ModelArchiveExtras read_model_extras(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    throw InputError(fmt::format("{}: model file not found; give the path of a TorchScript archive saved with "
                                 "torch.jit.save, or --tokenizer FILE",
                                 path));
  }
  reject_pipe_or_device(path, "expected a TorchScript archive");
  if (std::filesystem::is_directory(path) || !starts_like_zip(path)) {
    throw InputError(fmt::format("{}: expected a TorchScript archive (a zip file written by torch.jit.save), "
                                 "found {}; give the model file, or a tokenizer with --tokenizer FILE",
                                 path, std::filesystem::is_directory(path) ? "a directory" : "another kind of file"));
  }
  const TorchScriptArchive archive(path);
  return {archive.read("extra/tokenizer.json", kMaxTokenizerBytes), archive.read("extra/headscan.json", kMaxMetadataBytes)};
}

ModelMetadata parse_model_metadata(const std::string& text, const std::string& origin) {
  ModelMetadata metadata;
  if (text.empty()) return metadata;
  const char* expected =
      "{\"name\": string, \"bos_token\": string, \"max_length\": integer, \"causal\": bool, \"n_kv_heads\": integer}";
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: expected {}, found invalid JSON ({}); fix the file inside the archive", origin,
                                 expected, e.what()));
  }
  try {
    if (!doc.is_object()) throw std::runtime_error("not an object");
    if (auto it = doc.find("name"); it != doc.end() && !it->is_null()) metadata.name = it->get<std::string>();
    if (auto it = doc.find("bos_token"); it != doc.end() && !it->is_null()) metadata.bos_token = it->get<std::string>();
    if (auto it = doc.find("max_length"); it != doc.end() && !it->is_null()) metadata.max_length = it->get<std::int64_t>();
    if (auto it = doc.find("causal"); it != doc.end() && !it->is_null()) metadata.causal = it->get<bool>();
    if (auto it = doc.find("n_kv_heads"); it != doc.end() && !it->is_null()) metadata.n_kv_heads = it->get<int>();
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{}: expected {}, found {} ({}); fix the file inside the archive", origin, expected,
                                 doc.dump(), e.what()));
  }
  if (metadata.max_length && *metadata.max_length < 2) {
    throw InputError(fmt::format("{}: max_length must be at least 2, found {}", origin, *metadata.max_length));
  }
  return metadata;
}

}  // namespace headscan
