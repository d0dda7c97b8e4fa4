// A shard's directory read (read_shard_state, shard_state.h): state.json within its size bound,
// idf.txt present, and examples.bin exactly as long as the state says, every float in it an
// attention weight.
#include "analyzer/run/shards/shard_state.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "analyzer/errors.h"

namespace headscan {
namespace {

constexpr std::size_t kMaxStateBytes = std::size_t{1} << 30;

// examples.bin's floats are attention weights: finite, from 0 to 1. Reads it in blocks.
void check_example_floats(const ShardState& state, const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> block(std::size_t{1} << 16);
  std::uint64_t position = 0;
  while (position < state.example_floats) {
    const std::uint64_t wanted = std::min<std::uint64_t>(block.size(), state.example_floats - position);
    in.read(reinterpret_cast<char*>(block.data()), static_cast<std::streamsize>(wanted * sizeof(float)));
    if (!in) throw std::runtime_error(fmt::format("{}: cannot be read", path.string()));
    for (std::uint64_t i = 0; i < wanted; ++i) {
      const float weight = block[i];
      if (weight >= 0 && weight <= 1) continue;
      const std::uint64_t at = position + i;
      // The example it belongs to: the lists lie end to end (parse_examples).
      std::string where = "no example";
      for (const auto* list : {&state.examples, &state.probe_examples}) {
        for (std::size_t index = 0; index < list->size(); ++index) {
          const SavedExample& example = (*list)[index];
          const std::uint64_t length = example.tokens.size();
          const std::uint64_t offset = at - example.offset;
          if (at < example.offset || offset >= static_cast<std::uint64_t>(state.layers) * state.heads * length * length) {
            continue;
          }
          where = fmt::format("{}[{}], layer {}, head {}, query {}, key {}",
                              list == &state.examples ? "examples" : "probe_examples", index,
                              offset / (state.heads * length * length), offset / (length * length) % state.heads,
                              offset / length % length, offset % length);
        }
      }
      throw InputError(fmt::format("{}: float {} ({}) is {}: an attention weight is a probability from 0 to 1; the "
                                   "shard's directory is damaged: run the shard again",
                                   path.string(), at, where, weight));
    }
    position += wanted;
  }
}

}  // namespace

ShardState read_shard_state(const std::string& directory) {
  namespace fs = std::filesystem;
  const fs::path path = fs::path(directory) / kShardStateFile;
  std::error_code error;
  if (!fs::is_directory(directory, error)) {
    throw InputError(fmt::format("{}: expected a shard's directory (written by headscan --shard I/N -o DIR), found {}",
                                 directory, fs::exists(directory, error) ? "a file" : "nothing at this path"));
  }
  if (!fs::is_regular_file(path, error)) {
    throw InputError(fmt::format("{}: no {} in this directory: it is not a shard's, or its shard has not finished; run "
                                 "the shard (headscan MODEL CORPUS --shard I/N -o {})",
                                 directory, kShardStateFile, directory));
  }
  const auto size = fs::file_size(path, error);
  if (error || size > kMaxStateBytes) {
    throw InputError(fmt::format("{}: larger than a shard state can be ({} bytes at most)", path.string(), kMaxStateBytes));
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw std::runtime_error(fmt::format("{}: cannot be read", path.string()));
  ShardState state = parse_shard_state(text.str(), path.string());
  state.directory = directory;
  if (!fs::is_regular_file(fs::path(directory) / "idf.txt", error)) {
    throw InputError(fmt::format("{}: no idf.txt in this shard's directory: it is damaged; run the shard again",
                                 directory));
  }
  const fs::path examples = fs::path(directory) / kShardExamplesFile;
  const auto example_bytes = fs::exists(examples, error) ? fs::file_size(examples, error) : 0;
  if (error || example_bytes != state.example_floats * sizeof(float)) {
    throw InputError(fmt::format("{}: expected {} bytes of example attention, found {}; the shard's directory is "
                                 "damaged: run the shard again",
                                 examples.string(), state.example_floats * sizeof(float), example_bytes));
  }
  check_example_floats(state, examples);
  return state;
}

}  // namespace headscan
