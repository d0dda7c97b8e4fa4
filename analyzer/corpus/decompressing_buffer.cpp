#include "analyzer/corpus/decompressing_buffer.h"

#include <algorithm>
#include <new>

#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>

#include "analyzer/errors.h"

namespace headscan {

const char* compression_of(std::string_view start) {
  if (start.substr(0, 2) == "\x1F\x8B") return "gzip";
  if (start.substr(0, 4) == "\x28\xB5\x2F\xFD") return "zstd";
  if (start.substr(0, 6) == std::string_view("\xFD" "7zXZ\0", 6)) return "xz";
  return "none";
}

DecompressingBuffer::DecompressingBuffer(const std::string& path, const std::string& expected,
                                         std::string_view compression, std::uint64_t file_bytes)
    : archive_(archive_read_new()), compression_(compression), file_bytes_(file_bytes) {
  if (archive_ == nullptr) throw std::bad_alloc();
  archive_read_support_filter_gzip(archive_);
  archive_read_support_filter_zstd(archive_);
  archive_read_support_filter_xz(archive_);
  archive_read_support_format_raw(archive_);
  archive_read_support_format_empty(archive_);  // compressed nothing: an empty corpus, not damage
  archive_entry* entry = nullptr;
  const int opened = archive_read_open_filename(archive_, path.c_str(), kBlockBytes);
  const int header = opened == ARCHIVE_OK ? archive_read_next_header(archive_, &entry) : opened;
  empty_ = header == ARCHIVE_EOF;
  if (header != ARCHIVE_OK && !empty_) {
    const std::string why = archive_error_string(archive_) != nullptr ? archive_error_string(archive_)
                                                                       : "it ends before its first block";
    archive_read_free(archive_);
    throw InputError(fmt::format("{}: {}, compressed with {}, but the {} data is damaged before its first line "
                                 "could be read ({}); check or recreate the file",
                                 path, expected, compression, compression, why));
  }
  if (empty_) {  // a stream of nothing, maybe followed by other bytes
    check_end();
    if (!error_.empty()) {
      archive_read_free(archive_);
      throw InputError(fmt::format("{}: {}, compressed with {}, but the stream holds nothing and {}; check or recreate "
                                   "the file",
                                   path, expected, compression, error_));
    }
  }
  // A file that only starts like a compressed one is read by the raw format as it is: refuse it.
  const int filter = archive_filter_code(archive_, 0);
  const int wanted = compression == "gzip" ? ARCHIVE_FILTER_GZIP
                     : compression == "zstd" ? ARCHIVE_FILTER_ZSTD
                                             : ARCHIVE_FILTER_XZ;
  if (filter != wanted) {
    archive_read_free(archive_);
    throw InputError(fmt::format("{}: {}; its first bytes are those of {} data, but it is not {} (damaged, or not "
                                 "compressed); check the file",
                                 path, expected, compression, compression));
  }
}

DecompressingBuffer::~DecompressingBuffer() { archive_read_free(archive_); }

std::uint64_t DecompressingBuffer::compressed_bytes_read() const {
  return static_cast<std::uint64_t>(std::max<la_int64_t>(0, archive_filter_bytes(archive_, -1)));
}

DecompressingBuffer::int_type DecompressingBuffer::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  if (!error_.empty() || empty_) return traits_type::eof();
  for (;;) {
    const void* block = nullptr;
    std::size_t size = 0;
    la_int64_t offset = 0;
    const int result = archive_read_data_block(archive_, &block, &size, &offset);
    if (result == ARCHIVE_EOF) {
      check_end();
      return traits_type::eof();
    }
    if (result < ARCHIVE_WARN) {
      error_ = archive_error_string(archive_) != nullptr ? archive_error_string(archive_) : "the stream is cut short";
      return traits_type::eof();
    }
    if (size == 0) continue;
    decompressed_ += size;
    if (early_ratio_ == 0 && decompressed_ >= kRatioBytes) {
      early_ratio_ = static_cast<double>(decompressed_) / static_cast<double>(std::max<std::uint64_t>(1, compressed_bytes_read()));
    }
    char* data = static_cast<char*>(const_cast<void*>(block));
    setg(data, data, data + size);
    return traits_type::to_int_type(*gptr());
  }
}

void DecompressingBuffer::check_end() {
  if (compression_ != "gzip" || file_bytes_ == 0) return;
  const std::uint64_t used = compressed_bytes_read();
  if (used < file_bytes_) {
    error_ = fmt::format("{} bytes after the end of the gzip stream, at byte {}, are not gzip data",
                         file_bytes_ - used, used);
  }
}

}  // namespace headscan
