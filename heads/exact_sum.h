#pragma once
// A sum of doubles whose additions are exact: fixed point with 40 fractional bits in 128 bits.
// Each batch's sum (in double) is rounded to 2^-40 once and added exactly, so a total does not
// depend on the order in which batches or merged shards are added, and shards merge to the single
// run's sums bit for bit (heads/head_means.h). Needs no LibTorch: the shard reader checks saved
// sums with it (heads/saved_statistics.h).

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace headscan {

class ExactSum {
 public:
  __extension__ using Units = __int128;
  static constexpr int kFractionBits = 40;

  // Adds a batch sum rounded to 2^-40. False, adding nothing, when it is not finite or beyond
  // ±1e24, more than the 128 bits hold with room for many batches.
  [[nodiscard]] bool add(double value);
  // Added as unsigned: wraps instead of overflowing on sums no real run reaches (damaged input).
  void add(const ExactSum& other) {
    units_ = static_cast<Units>(static_cast<Unsigned>(units_) + static_cast<Unsigned>(other.units_));
  }
  double value() const;
  // The exact sum, in units of 2^-40.
  Units units() const { return units_; }

  // Saved as two integers, the high (signed) and low (unsigned) 64 bits.
  nlohmann::json save() const;
  // `saved` read back: [high, low] as save() writes it; nullopt for anything else.
  static std::optional<ExactSum> parse(const nlohmann::json& saved);
  // The same, throwing InputError naming `path` (a JSON path, "statistics.self.sums[0][1]").
  static ExactSum load(const nlohmann::json& saved, const std::string& path);

 private:
  __extension__ using Unsigned = unsigned __int128;
  Units units_ = 0;  // the sum in units of 2^-40
};

}  // namespace headscan
