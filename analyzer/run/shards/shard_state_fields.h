#pragma once
// Reading a shard's state.json field by field (shard_state.cpp, shard_order.cpp): JSON paths for
// messages, and Fields, which reads one value and throws InputError naming the file, the field and
// the rule it breaks. Internal to headscan_shard_state.

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>

#include <fmt/format.h>

#include "analyzer/errors.h"
#include "analyzer/json_limits.h"
#include "analyzer/run/shards/shard_state.h"

namespace headscan::shard_fields {

using Json = nlohmann::ordered_json;

// A run's time and its phases', in seconds: finite, and added up over a million shards still finite.
constexpr double kMaxSeconds = 1e9;

// A JSON path below `parent` ("" is the state itself).
inline std::string below(const std::string& parent, const std::string& key) { return parent.empty() ? key : parent + "." + key; }
inline std::string indexed(const std::string& parent, std::size_t index) { return fmt::format("{}[{}]", parent, index); }

// A value of a state for a message (quote_json takes nlohmann::json, states are ordered_json).
inline std::string quoted(const Json& value) { return quote_json(nlohmann::json::parse(value.dump()), 120); }

// Reads fields of one state file, throwing InputError that names the file, the field and the rule.
// Paths are JSON paths from the state's root ("counts.tokens"); "" is the root.
class Fields {
 public:
  explicit Fields(const std::string& where) : where_(where) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("{}: not a usable shard state ({}); run the shard again, or give the directory a "
                                 "`headscan MODEL CORPUS --shard I/N -o DIR` run wrote",
                                 where_, what));
  }

  const Json& get(const Json& object, const char* key, const std::string& path) const {
    const std::string name = path.empty() ? "state" : path;
    if (!object.is_object()) fail(fmt::format("{} is not an object", name));
    const auto found = object.find(key);
    if (found == object.end()) fail(fmt::format("{} has no \"{}\"", name, key));
    return *found;
  }
  const Json& object(const Json& parent, const char* key, const std::string& path) const {
    const auto& value = get(parent, key, path);
    if (!value.is_object()) fail(fmt::format("{} is not an object", below(path, key)));
    return value;
  }
  const Json& array(const Json& parent, const char* key, const std::string& path) const {
    const auto& value = get(parent, key, path);
    if (!value.is_array()) fail(fmt::format("{} is not an array", below(path, key)));
    return value;
  }
  std::string string(const Json& parent, const char* key, const std::string& path) const {
    const auto& value = get(parent, key, path);
    if (!value.is_string()) fail(fmt::format("{} is not a string", below(path, key)));
    return value.get<std::string>();
  }
  // A JSON whole number: 2.0 is refused like 1.5, where the writer writes integers.
  std::uint64_t count(const Json& parent, const char* key, const std::string& path,
                      std::uint64_t maximum = INT64_MAX) const {
    const auto& value = get(parent, key, path);
    if (!value.is_number_unsigned() || value.get<std::uint64_t>() > maximum) {
      fail(fmt::format("{} is {}: expected a whole number (written without a point) from 0 to {}", below(path, key),
                       quoted(value), maximum));
    }
    return value.get<std::uint64_t>();
  }
  // Seconds: finite, from 0 to kMaxSeconds.
  double seconds(const Json& value, const std::string& path) const {
    if (!value.is_number() || !(value.get<double>() >= 0 && value.get<double>() <= kMaxSeconds)) {
      fail(fmt::format("{} is {}: expected seconds from 0 to {:g}", path, quoted(value), kMaxSeconds));
    }
    return value.get<double>();
  }
  bool boolean(const Json& parent, const char* key, const std::string& path) const {
    const auto& value = get(parent, key, path);
    if (!value.is_boolean()) fail(fmt::format("{} is not true or false", below(path, key)));
    return value.get<bool>();
  }
  // `object` holds no name but `keys`.
  void known(const Json& object, std::initializer_list<const char*> keys, const std::string& path) const {
    for (const auto& item : object.items()) {
      if (std::none_of(keys.begin(), keys.end(), [&](const char* key) { return item.key() == key; })) {
        fail(fmt::format("{} holds {}, a name headscan {} does not know there (it knows {})",
                         path.empty() ? "state" : path, quote_json(nlohmann::json(item.key())), HEADSCAN_VERSION,
                         fmt::join(keys, ", ")));
      }
    }
  }
  // The headscan version, wherever a state writes it, is this headscan's: statistics are read as
  // this version defines them.
  void version(const Json& parent, const std::string& path) const {
    const auto& value = get(parent, "headscan_version", path);
    if (value != HEADSCAN_VERSION) {
      throw InputError(fmt::format("{}: {} is {}, but this is headscan {}, which merges only the shards it writes "
                                   "(what each statistic means may differ between versions); merge with the headscan "
                                   "that ran the shards, or run them again with this one",
                                   where_, below(path, "headscan_version"), quoted(value), HEADSCAN_VERSION));
    }
  }

 private:
  const std::string& where_;
};

}  // namespace headscan::shard_fields
