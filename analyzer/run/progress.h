#pragma once
// Progress on stderr: a redrawn bar with tokens/s and ETA on a terminal, a line at every 10 %
// otherwise, nothing when disabled; or every update handed to a front end's callback instead.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "analyzer/run/analysis.h"

namespace headscan {

class Progress {
 public:
  // `total` is the amount of work in the unit of update() (corpus bytes, or sequences); 0 when
  // unknown (a corpus still being written): a callback is then given the total 0.
  // With `callback` set, every update goes to it (in `unit`) instead of stderr.
  Progress(bool enabled, std::uint64_t total, std::string unit_name,
           std::function<void(const ProgressUpdate&)> callback = {}, const char* unit = "");
  // `done`: work done so far; `tokens`: tokens analysed so far.
  void update(std::uint64_t done, std::uint64_t tokens);
  void finish(std::uint64_t tokens);

 private:
  void draw(double fraction, std::uint64_t tokens, bool final);

  std::function<void(const ProgressUpdate&)> callback_;
  const char* unit_;
  bool enabled_;
  bool terminal_;
  std::uint64_t total_;
  std::uint64_t done_ = 0;
  std::string unit_name_;
  int last_decile_ = -1;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace headscan
