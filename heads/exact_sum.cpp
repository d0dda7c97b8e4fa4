#include "heads/exact_sum.h"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/json_limits.h"

namespace headscan {
namespace {

constexpr double kLargestBatchSum = 1e24;

}  // namespace

bool ExactSum::add(double value) {
  if (!std::isfinite(value) || std::fabs(value) >= kLargestBatchSum) return false;
  ExactSum batch;
  batch.units_ = static_cast<Units>(std::nearbyint(std::ldexp(value, kFractionBits)));
  add(batch);
  return true;
}

double ExactSum::value() const { return std::ldexp(static_cast<double>(units_), -kFractionBits); }

nlohmann::json ExactSum::save() const {
  const auto high = static_cast<std::int64_t>(units_ >> 64);
  const auto low = static_cast<std::uint64_t>(units_ & ~std::uint64_t{0});
  return nlohmann::json::array({high, low});
}

std::optional<ExactSum> ExactSum::parse(const nlohmann::json& saved) {
  if (!saved.is_array() || saved.size() != 2 || !saved[0].is_number_integer() || !saved[1].is_number_unsigned()) {
    return std::nullopt;
  }
  // A high part above INT64_MAX parses as unsigned: not a number save() writes.
  if (saved[0].is_number_unsigned() && saved[0].get<std::uint64_t>() > INT64_MAX) return std::nullopt;
  ExactSum sum;
  // Shifted as unsigned: a left shift of a negative value is undefined.
  const auto high = static_cast<Unsigned>(static_cast<std::uint64_t>(saved[0].get<std::int64_t>()));
  sum.units_ = static_cast<Units>((high << 64) | static_cast<Unsigned>(saved[1].get<std::uint64_t>()));
  return sum;
}

ExactSum ExactSum::load(const nlohmann::json& saved, const std::string& path) {
  if (const std::optional<ExactSum> sum = parse(saved)) return *sum;
  throw InputError(fmt::format("{} is {}: a saved sum is [high, low], whole numbers from -2^63 to 2^63-1 and from 0 "
                               "to 2^64-1 (its 128 bits in units of 2^-40)",
                               path, quote_json(saved)));
}

}  // namespace headscan
