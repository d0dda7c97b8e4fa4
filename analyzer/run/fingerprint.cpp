#include "analyzer/run/fingerprint.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <openssl/evp.h>

namespace headscan {
namespace {

constexpr std::size_t kSampleBytes = std::size_t{1} << 20;

class Sha256 {
 public:
  Sha256() : context_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!context_ || EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1) {
      throw std::runtime_error("SHA-256 is not available from OpenSSL");
    }
  }
  void add(const void* data, std::size_t size) { EVP_DigestUpdate(context_.get(), data, size); }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_DigestFinal_ex(context_.get(), digest, &length);
    std::string text;
    for (unsigned int i = 0; i < length; ++i) text += fmt::format("{:02x}", digest[i]);
    return text;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context_;
};

std::ifstream open_for_hashing(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error(fmt::format("{}: cannot be read to fingerprint it ({})", path, std::strerror(errno)));
  return file;
}

// Adds up to `size` bytes of `file` from its current position.
void add_bytes(Sha256& hash, std::ifstream& file, std::uint64_t size) {
  std::vector<char> buffer(std::size_t{1} << 16);
  while (size > 0 && file) {
    file.read(buffer.data(), static_cast<std::streamsize>(std::min<std::uint64_t>(size, buffer.size())));
    const auto got = static_cast<std::size_t>(file.gcount());
    if (got == 0) break;
    hash.add(buffer.data(), got);
    size -= got;
  }
}

}  // namespace

std::string sha256_hex(std::string_view text) {
  Sha256 hash;
  hash.add(text.data(), text.size());
  return hash.hex();
}

std::string file_sha256(const std::string& path) {
  std::ifstream file = open_for_hashing(path);
  Sha256 hash;
  add_bytes(hash, file, UINT64_MAX);
  if (file.bad()) throw std::runtime_error(fmt::format("{}: reading failed while fingerprinting it", path));
  return hash.hex();
}

std::string sampled_file_sha256(const std::string& path) {
  std::ifstream file = open_for_hashing(path);
  file.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(file.tellg());
  file.seekg(0);
  Sha256 hash;
  const std::string size_text = std::to_string(size);
  hash.add(size_text.data(), size_text.size());
  add_bytes(hash, file, kSampleBytes);
  if (size > kSampleBytes) {
    file.clear();
    file.seekg(static_cast<std::streamoff>(size > 2 * kSampleBytes ? size - kSampleBytes : kSampleBytes));
    add_bytes(hash, file, kSampleBytes);
  }
  if (file.bad()) throw std::runtime_error(fmt::format("{}: reading failed while fingerprinting it", path));
  return hash.hex();
}

}  // namespace headscan
