#include "analyzer/tokenizers/sentencepiece_tokenizer.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "analyzer/errors.h"
#include "analyzer/resources.h"
#include "analyzer/tokenizers/sentencepiece_shim/sentencepiece_shim.h"
#include "analyzer/tokenizers/unicode.h"

namespace headscan {

namespace {

// The shim's functions, loaded once (see sentencepiece_shim.h for why it is a separate library).
struct SentencePieceLibrary {
  decltype(&headscan_spm_load) load;
  decltype(&headscan_spm_free) free;
  decltype(&headscan_spm_piece_size) piece_size;
  decltype(&headscan_spm_bos_id) bos_id;
  decltype(&headscan_spm_kind) kind;
  decltype(&headscan_spm_id_to_piece) id_to_piece;
  decltype(&headscan_spm_piece_to_id) piece_to_id;
  decltype(&headscan_spm_encode) encode;
};

// RTLD_DEEPBIND keeps sentencepiece's protobuf away from LibTorch's (sentencepiece_shim.h).
// AddressSanitizer refuses it; the fuzz and sanitizer builds set HEADSCAN_SENTENCEPIECE_DEEPBIND=0
// (the fuzz targets have no LibTorch and so no second protobuf; see the README on the sanitizer
// build for what that means there).
#ifndef HEADSCAN_SENTENCEPIECE_DEEPBIND
#define HEADSCAN_SENTENCEPIECE_DEEPBIND 1
#endif
constexpr int kDeepBind = HEADSCAN_SENTENCEPIECE_DEEPBIND ? RTLD_DEEPBIND : 0;

// Next to the executable (an installed headscan), beside the code (the wheel: resources.h), else
// where the build put it.
std::filesystem::path shim_path() {
  std::error_code error;
  const auto executable = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::string name = std::filesystem::path(HEADSCAN_SENTENCEPIECE_SHIM).filename().string();
  if (!error && std::filesystem::exists(executable.parent_path() / name)) return executable.parent_path() / name;
  if (std::filesystem::path installed = installed_file(name); !installed.empty()) return installed;
  return HEADSCAN_SENTENCEPIECE_SHIM;
}

const SentencePieceLibrary& sentencepiece_library() {
  static const SentencePieceLibrary library = [] {
    const std::filesystem::path path = shim_path();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | kDeepBind);
    if (handle == nullptr) {
      throw std::runtime_error("cannot load headscan's SentencePiece support library " + path.string() + " (" +
                               dlerror() + "); rebuild headscan with libsentencepiece-dev installed");
    }
    auto symbol = [&](const char* name) {
      void* address = dlsym(handle, name);
      if (address == nullptr) throw std::runtime_error(path.string() + " lacks " + name + "; rebuild headscan");
      return address;
    };
    SentencePieceLibrary loaded{};
    loaded.load = reinterpret_cast<decltype(loaded.load)>(symbol("headscan_spm_load"));
    loaded.free = reinterpret_cast<decltype(loaded.free)>(symbol("headscan_spm_free"));
    loaded.piece_size = reinterpret_cast<decltype(loaded.piece_size)>(symbol("headscan_spm_piece_size"));
    loaded.bos_id = reinterpret_cast<decltype(loaded.bos_id)>(symbol("headscan_spm_bos_id"));
    loaded.kind = reinterpret_cast<decltype(loaded.kind)>(symbol("headscan_spm_kind"));
    loaded.id_to_piece = reinterpret_cast<decltype(loaded.id_to_piece)>(symbol("headscan_spm_id_to_piece"));
    loaded.piece_to_id = reinterpret_cast<decltype(loaded.piece_to_id)>(symbol("headscan_spm_piece_to_id"));
    loaded.encode = reinterpret_cast<decltype(loaded.encode)>(symbol("headscan_spm_encode"));
    return loaded;
  }();
  return library;
}

void append_string(void* context, const char* text, std::size_t size) {
  static_cast<std::string*>(context)->append(text, size);
}

constexpr int kBytePiece = 1;
constexpr int kControl = 2;
constexpr int kUnknown = 4;

}  // namespace

struct SentencePieceTokenizer::Impl {
  const SentencePieceLibrary* library = nullptr;
  void* processor = nullptr;
  std::string path;
  ~Impl() {
    if (processor != nullptr) library->free(processor);
  }
  int kind(std::int64_t id) const { return library->kind(processor, static_cast<int>(id)); }
  std::string piece(std::int64_t id) const {
    std::string text;
    library->id_to_piece(processor, static_cast<int>(id), append_string, &text);
    return text;
  }
};

namespace {
// The byte a "<0xNN>" piece stands for.
int byte_of_piece(const std::string& piece) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return -1;
  return static_cast<int>(std::strtol(piece.substr(3, 2).c_str(), nullptr, 16));
}

// SentencePiece gives a character's span to its last byte piece only (the others have begin ==
// end). Gives each byte piece of `group` (indices into `tokens`, all byte pieces, the last one
// carrying the span) the span of the character its byte belongs to: when the bytes spell the
// text of the span, character by character; otherwise the whole span.
void spread_byte_spans(std::string_view text, const std::vector<std::size_t>& group, std::vector<Token>& tokens,
                       const std::vector<int>& bytes) {
  const Token& last = tokens[group.back()];
  const std::size_t begin = last.begin;
  const std::size_t end = last.end;
  bool spelled = end - begin == group.size();
  for (std::size_t i = 0; spelled && i < group.size(); ++i) {
    spelled = bytes[i] == static_cast<unsigned char>(text[begin + i]);
  }
  std::size_t character_begin = begin;
  std::size_t character_end = end;
  for (std::size_t i = 0; i < group.size(); ++i) {
    if (spelled && begin + i >= character_end) character_begin = begin + i;
    if (spelled && begin + i == character_begin) {
      character_end = std::min(end, character_begin + decode_utf8(text, character_begin).length);
    }
    tokens[group[i]].begin = character_begin;
    tokens[group[i]].end = character_end;
  }
}

}  // namespace

SentencePieceTokenizer::SentencePieceTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::load(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->library = &sentencepiece_library();
  std::string error;
  impl->processor = impl->library->load(path.c_str(), append_string, &error);
  if (impl->processor == nullptr) {
    throw InputError(path + ": expected a SentencePiece model (.model, as spm_train writes it), but the sentencepiece "
                     "library cannot load it (" + error +
                     "); give the tokenizer.model / spiece.model file of the model, or its tokenizer.json");
  }
  return std::unique_ptr<SentencePieceTokenizer>(new SentencePieceTokenizer(std::move(impl)));
}

std::vector<Token> SentencePieceTokenizer::encode(std::string_view text) const {
  std::vector<Token> tokens;
  impl_->library->encode(
      impl_->processor, text.data(), text.size(),
      [](void* context, int id, const char* piece, std::size_t size, std::size_t begin, std::size_t end) {
        static_cast<std::vector<Token>*>(context)->push_back({id, std::string(piece, size), begin, end});
      },
      &tokens);
  std::vector<std::size_t> byte_group;  // byte pieces waiting for the one that carries the span
  std::vector<int> byte_values;
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    const Token& token = tokens[k];
    const int byte = (impl_->kind(token.id) & kBytePiece) != 0 ? byte_of_piece(token.piece) : -1;
    if (byte < 0) {
      byte_group.clear();
      byte_values.clear();
      continue;
    }
    byte_group.push_back(k);
    byte_values.push_back(byte);
    if (token.end > token.begin) {
      spread_byte_spans(text, byte_group, tokens, byte_values);
      byte_group.clear();
      byte_values.clear();
    }
  }
  return tokens;
}

std::int64_t SentencePieceTokenizer::vocab_size() const { return impl_->library->piece_size(impl_->processor); }

std::optional<std::int64_t> SentencePieceTokenizer::token_to_id(std::string_view piece) const {
  const int id = impl_->library->piece_to_id(impl_->processor, piece.data(), piece.size());
  // PieceToId answers the unknown id for pieces it does not know.
  if (id < 0 || impl_->piece(id) != piece) return std::nullopt;
  return id;
}

std::string SentencePieceTokenizer::id_to_piece(std::int64_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return impl_->piece(id);
}

bool SentencePieceTokenizer::is_special(std::int64_t id) const {
  if (id < 0 || id >= vocab_size()) return false;
  return (impl_->kind(id) & (kControl | kUnknown)) != 0;
}

std::string SentencePieceTokenizer::describe() const {
  return "SentencePiece, " + std::to_string(vocab_size()) + " pieces";
}

std::vector<std::string> SentencePieceTokenizer::template_prefix() const {
  const int bos = impl_->library->bos_id(impl_->processor);
  if (bos < 0 || bos >= vocab_size()) return {};
  return {impl_->piece(bos)};
}

}  // namespace headscan
