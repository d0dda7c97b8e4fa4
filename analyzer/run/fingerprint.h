#pragma once
// Fingerprints of a run's inputs, recorded in a shard's state (analyzer/run/shards/shard_state.h)
// so that `headscan merge` can tell shards of different inputs apart: SHA-256 (OpenSSL), as hex.

#include <cstdint>
#include <string>
#include <string_view>

namespace headscan {

// SHA-256 of the bytes of `text`.
std::string sha256_hex(std::string_view text);

// SHA-256 of the whole file at `path`. Throws std::runtime_error when it cannot be read.
std::string file_sha256(const std::string& path);

// A cheap fingerprint of a large file, read only at its ends: SHA-256 of its size, its first MiB
// and its last MiB. Shards each read 1/N of a corpus; hashing all of it would read it N times.
std::string sampled_file_sha256(const std::string& path);

}  // namespace headscan
