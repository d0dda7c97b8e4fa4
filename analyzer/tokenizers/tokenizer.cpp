// Choosing a tokenizer implementation by file, and the BOS rule shared by the analysis and
// `headscan tokenize`.

#include "analyzer/tokenizers/tokenizer.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analyzer/errors.h"
#include "analyzer/tokenizers/sentencepiece_tokenizer.h"

namespace headscan {
namespace {

constexpr const char* kSupportedFiles =
    "tokenizer.json (Hugging Face tokenizers) and .model (SentencePiece, e.g. tokenizer.model or spiece.model)";

std::string lowercase_extension(const std::filesystem::path& path) {
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension;
}

std::string read_file(const std::string& path, const char* expected) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) {
    throw InputError(path + ": expected a readable " + expected + ", found it cannot be read (" +
                     std::strerror(errno) + "); check its permissions");
  }
  return text.str();
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (!fs::exists(status)) {
    throw InputError(shown_path(path) + ": expected a tokenizer file, found nothing at this path; check the path " +
                     "(supported: " + kSupportedFiles + ")");
  }
  if (fs::is_directory(status)) {
    const bool has_json = fs::exists(fs::path(path) / "tokenizer.json", error);
    throw InputError(path + ": expected a tokenizer file (tokenizer.json or .model), found a directory; give " +
                     (has_json ? (fs::path(path) / "tokenizer.json").string() : "the tokenizer file inside it"));
  }
  reject_pipe_or_device(path, "expected a tokenizer file");
  const std::string extension = lowercase_extension(path);
  if (extension == ".json") return tokenizer_from_hf_json(read_file(path, "tokenizer.json"), path);
  if (extension == ".model") return SentencePieceTokenizer::load(path);
  const std::string found = extension.empty() ? "a file with no extension" : "a \"" + extension + "\" file";
  throw InputError(path + ": expected a tokenizer file, found " + found + "; supported formats: " + kSupportedFiles +
                   ". Give the tokenizer.json that the tokenizers library saved for this model, or its "
                   "SentencePiece model");
}

std::optional<BosChoice> choose_bos(const Tokenizer& tokenizer, const std::string& metadata_bos_token,
                                    const std::string& metadata_origin) {
  if (!metadata_bos_token.empty()) {
    const std::optional<std::int64_t> id = tokenizer.token_to_id(metadata_bos_token);
    if (!id) {
      throw InputError(metadata_origin + ": bos_token \"" + metadata_bos_token +
                       "\" is not in the tokenizer's vocabulary (" + tokenizer.describe() +
                       "); fix bos_token or use the model's own tokenizer");
    }
    return BosChoice{*id, metadata_bos_token, "headscan.json"};
  }
  const std::vector<std::string> prefix = tokenizer.template_prefix();
  if (prefix.empty()) return std::nullopt;
  if (prefix.size() > 1) {
    std::string joined;
    for (const std::string& token : prefix) joined += (joined.empty() ? "" : " ") + token;
    throw InputError(metadata_origin + ": the tokenizer's template puts " + std::to_string(prefix.size()) +
                     " tokens (" + joined +
                     ") before the text, but headscan prepends one BOS; set bos_token in headscan.json to the "
                     "token the model should see first");
  }
  const std::optional<std::int64_t> id = tokenizer.token_to_id(prefix.front());
  if (!id) {
    throw InputError("the tokenizer's template starts with \"" + prefix.front() + "\", which is not in its vocabulary (" +
                     tokenizer.describe() + "); set bos_token in " + metadata_origin + " or fix the tokenizer");
  }
  return BosChoice{*id, prefix.front(), "tokenizer template"};
}

std::vector<std::int64_t> template_suffix_ids(const Tokenizer& tokenizer) {
  std::vector<std::int64_t> ids;
  for (const std::string& token : tokenizer.template_suffix()) {
    const std::optional<std::int64_t> id = tokenizer.token_to_id(token);
    if (!id) {
      throw InputError("the tokenizer's template ends with \"" + token + "\", which is not in its vocabulary (" +
                       tokenizer.describe() + "); fix the tokenizer's post_processor or its added_tokens");
    }
    ids.push_back(*id);
  }
  return ids;
}

}  // namespace headscan
