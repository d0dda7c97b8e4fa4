#include "analyzer/run/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

namespace headscan {

namespace {

std::string format_duration(double seconds) {
  const auto total = static_cast<long>(seconds + 0.5);
  if (total >= 3600) return fmt::format("{}h{:02}m", total / 3600, total % 3600 / 60);
  return fmt::format("{}m{:02}s", total / 60, total % 60);
}

}  // namespace

Progress::Progress(bool enabled, std::uint64_t total, std::string unit_name,
                   std::function<void(const ProgressUpdate&)> callback, const char* unit)
    : callback_(std::move(callback)),
      unit_(unit),
      enabled_(enabled),
      terminal_(isatty(STDERR_FILENO) != 0),
      total_(total),
      unit_name_(std::move(unit_name)),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

void Progress::update(std::uint64_t done, std::uint64_t tokens) {
  if (!enabled_) return;
  if (callback_) {
    done_ = done;
    callback_(ProgressUpdate{total_ > 0 ? std::min(done, total_) : done, total_, tokens, unit_, false});
    return;
  }
  const double fraction =
      total_ > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total_)) : 0.0;
  if (terminal_) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_draw_ < std::chrono::milliseconds(200)) return;
    last_draw_ = now;
    draw(fraction, tokens, false);
    return;
  }
  const int decile = static_cast<int>(fraction * 10);
  if (decile > last_decile_ && decile < 10) {
    last_decile_ = decile;
    draw(fraction, tokens, false);
  }
}

void Progress::finish(std::uint64_t tokens) {
  if (!enabled_) return;
  if (callback_) {
    callback_(ProgressUpdate{total_ > 0 ? total_ : done_, total_, tokens, unit_, true});
    return;
  }
  draw(1.0, tokens, true);
}

void Progress::draw(double fraction, std::uint64_t tokens, bool final) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(tokens) / elapsed : 0;
  const std::string eta = fraction > 0 && !final ? format_duration(elapsed * (1 - fraction) / fraction) : "0m00s";
  if (terminal_) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(fraction * kWidth);
    fmt::print(stderr, "\r[{}{}] {:3.0f}% {} tokens, {:.0f} tokens/s, ETA {}{}", std::string(filled, '#'),
               std::string(kWidth - filled, '.'), fraction * 100, tokens, rate, eta, final ? "\n" : "   ");
  } else {
    fmt::print(stderr, "{:3.0f}% of {}: {} tokens, {:.0f} tokens/s, {} elapsed{}\n", fraction * 100, unit_name_,
               tokens, rate, format_duration(elapsed), final ? "" : ", ETA " + eta);
  }
  std::fflush(stderr);
}

}  // namespace headscan
