#pragma once
// Decompressing a corpus as it is read: gzip, zstd and xz through libarchive's raw format, as a
// std::streambuf that TextLineReader reads lines from (analyzer/corpus/text_lines.h).

#include <cstdint>
#include <streambuf>
#include <string>
#include <string_view>

struct archive;

namespace headscan {

// The compression a file's first bytes announce: "gzip", "zstd", "xz" or "none".
const char* compression_of(std::string_view start);

// The decompressed bytes of a gzip, zstd or xz file, block by block as libarchive decompresses
// them. A damaged stream ends the input early; error() then says why, and the lines before it
// have all been read. Bytes after the end of a gzip stream are damage too.
class DecompressingBuffer : public std::streambuf {
 public:
  // `expected` says what the file should be, for messages; `file_bytes`: the file's size (0 when
  // unknown), to find data after the end of a gzip stream. Throws InputError when the file is not
  // `compression` data or is damaged before its first block.
  DecompressingBuffer(const std::string& path, const std::string& expected, std::string_view compression,
                      std::uint64_t file_bytes);
  ~DecompressingBuffer() override;
  DecompressingBuffer(const DecompressingBuffer&) = delete;
  DecompressingBuffer& operator=(const DecompressingBuffer&) = delete;

  const std::string& error() const { return error_; }
  std::uint64_t compressed_bytes_read() const;
  // The expansion of the first kRatioBytes decompressed, once that many were (0 before).
  double early_ratio() const { return early_ratio_; }
  static constexpr std::uint64_t kRatioBytes = 100'000'000;

 protected:
  int_type underflow() override;

 private:
  // libarchive ends a gzip stream quietly at bytes that do not start another gzip member, where
  // xz and zstd refuse them: data after the stream is damage too.
  void check_end();

  static constexpr std::size_t kBlockBytes = 1 << 16;
  archive* archive_;
  std::string_view compression_;
  std::uint64_t file_bytes_ = 0;
  std::uint64_t decompressed_ = 0;
  double early_ratio_ = 0;
  std::string error_;
  bool empty_ = false;
};

}  // namespace headscan
