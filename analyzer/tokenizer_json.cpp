// Reads Hugging Face tokenizer.json files into a PipelineTokenizer. Each stage has its own reader
// (normalizer_from_json, pre_tokenizer_from_json, one per model); this file holds the model switch.

#include "analyzer/tokenizer_json.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/pipeline_tokenizer.h"
#include "analyzer/wordlevel_model.h"

namespace headscan {
namespace {

constexpr const char* kSupportedModels = "WordLevel (BPE, WordPiece, Unigram and SentencePiece are planned)";
constexpr const char* kSupportedPostProcessors = "TemplateProcessing, BertProcessing, RobertaProcessing, null";
constexpr const char* kWhatToDo = "give the tokenizer.json that the tokenizers library saved for this model";

std::string describe_json(const nlohmann::json* found) {
  if (found == nullptr) return "nothing (the field is missing)";
  std::string text = found->dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return std::string(found->type_name()) + " " + text;
}

// Files written before the tokenizers library stored "type" are recognised by their fields.
std::string model_type(const nlohmann::json& spec, const std::string& origin) {
  if (spec.contains("type")) return component_type(spec, origin, "model");
  if (spec.contains("merges")) return "BPE";
  if (spec.contains("vocab") && spec["vocab"].is_array()) return "Unigram";
  if (spec.contains("continuing_subword_prefix")) return "WordPiece";
  return "WordLevel";
}

std::unique_ptr<TokenizerModel> model_from_json(const nlohmann::json* spec, const std::string& origin) {
  if (spec == nullptr || !spec->is_object()) {
    throw_bad_field(origin, "model", "an object describing the tokenizer model", spec);
  }
  const std::string type = model_type(*spec, origin);
  if (type == "WordLevel") return WordLevelModel::from_json(*spec, origin);
  throw_unsupported_type(origin, "model", "model", type, kSupportedModels);
}

// Post-processors add special tokens around a sequence. headscan adds BOS itself (headscan.json),
// so the known ones are accepted and not run.
void check_post_processor(const nlohmann::json* spec, const std::string& origin) {
  if (spec == nullptr || spec->is_null()) return;
  const std::string type = component_type(*spec, origin, "post_processor");
  if (type == "TemplateProcessing" || type == "BertProcessing" || type == "RobertaProcessing") return;
  throw_unsupported_type(origin, "post_processor", "post-processor", type, kSupportedPostProcessors);
}

const nlohmann::json* field(const nlohmann::json& object, const char* name) {
  const auto found = object.find(name);
  return found == object.end() ? nullptr : &*found;
}

std::string lowercase_extension(const std::filesystem::path& path) {
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension;
}

}  // namespace

std::string component_type(const nlohmann::json& spec, const std::string& origin, const std::string& where) {
  if (!spec.is_object()) throw_bad_field(origin, where, "an object with a \"type\"", &spec);
  const nlohmann::json* type = field(spec, "type");
  if (type == nullptr || !type->is_string()) throw_bad_field(origin, where + ".type", "a type name", type);
  return type->get<std::string>();
}

void throw_unsupported_type(const std::string& origin, const std::string& where, const std::string& kind,
                            const std::string& type, const std::string& supported) {
  throw InputError(origin + ": unsupported " + kind + " type \"" + type + "\" (in " + where +
                   "); supported: " + supported + ". Give a tokenizer.json whose " + kind + " is one of these");
}

void throw_bad_field(const std::string& origin, const std::string& where, const std::string& expected,
                     const nlohmann::json* found) {
  throw InputError(origin + ": expected " + where + " to be " + expected + ", found " + describe_json(found) + "; " +
                   kWhatToDo);
}

std::unique_ptr<Tokenizer> tokenizer_from_hf_json(std::string_view json_text, const std::string& origin) {
  nlohmann::json spec;
  try {
    spec = nlohmann::json::parse(json_text.begin(), json_text.end());
  } catch (const nlohmann::json::parse_error& e) {
    std::string detail = e.what();
    const std::size_t prefix_end = detail.find("] ");  // drop "[json.exception.parse_error.101] "
    if (prefix_end != std::string::npos) detail = detail.substr(prefix_end + 2);
    throw InputError(origin + ": expected a Hugging Face tokenizer.json, found malformed JSON (" + detail + "); " +
                     kWhatToDo);
  }
  if (!spec.is_object()) throw_bad_field(origin, "the file", "a JSON object (a Hugging Face tokenizer.json)", &spec);

  try {
    std::vector<AddedToken> added_tokens = added_tokens_from_json(field(spec, "added_tokens"), origin);
    const nlohmann::json null_spec;
    const nlohmann::json* normalizer = field(spec, "normalizer");
    const nlohmann::json* pre_tokenizer = field(spec, "pre_tokenizer");
    auto model = model_from_json(field(spec, "model"), origin);
    check_post_processor(field(spec, "post_processor"), origin);
    return std::make_unique<PipelineTokenizer>(
        std::move(added_tokens), normalizer_from_json(normalizer ? *normalizer : null_spec, origin),
        pre_tokenizer_from_json(pre_tokenizer ? *pre_tokenizer : null_spec, origin), std::move(model));
  } catch (const nlohmann::json::exception& e) {  // a field of an unexpected JSON type we did not check
    throw InputError(origin + ": expected a Hugging Face tokenizer.json, found " + e.what() + "; " + kWhatToDo);
  }
}

std::unique_ptr<Tokenizer> load_tokenizer_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (!fs::exists(status)) {
    throw InputError(path + ": expected a tokenizer file (tokenizer.json), found nothing at this path; check the path");
  }
  if (fs::is_directory(status)) {
    const bool has_json = fs::exists(fs::path(path) / "tokenizer.json", error);
    throw InputError(path + ": expected a tokenizer file (tokenizer.json), found a directory; give " +
                     (has_json ? (fs::path(path) / "tokenizer.json").string() : "the tokenizer.json file inside it"));
  }
  const std::string extension = lowercase_extension(path);
  if (extension != ".json") {
    const std::string found = extension.empty() ? "a file with no extension" : "a \"" + extension + "\" file";
    throw InputError(path + ": expected a Hugging Face tokenizer.json, found " + found +
                     "; supported formats: tokenizer.json (SentencePiece .model files are planned). "
                     "Give the tokenizer.json that the tokenizers library saved for this model");
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) {
    throw InputError(path + ": expected a readable tokenizer.json, found it cannot be read (" + std::strerror(errno) +
                     "); check its permissions");
  }
  return tokenizer_from_hf_json(text.str(), path);
}

}  // namespace headscan
