#pragma once
// The cache a streaming head keeps (heads/streaming.cpp): S sink tokens and a window of the W most
// recent ones. Its two sizes are parameters named like thresholds, so that shards agree on them,
// heads.json records them, and the KV-cache plan (analyzer/run/kv_plan.h) writes them.

#include <cstdint>

#include "heads/head_type.h"

namespace headscan {

inline constexpr const char* kStreamingSink = "streaming_sink";
inline constexpr const char* kStreamingWindow = "streaming_window";
inline constexpr std::int64_t kDefaultStreamingSink = 4;
inline constexpr std::int64_t kDefaultStreamingWindow = 64;

struct StreamingWindow {
  std::int64_t sink = kDefaultStreamingSink;
  std::int64_t window = kDefaultStreamingWindow;
};

// The cache DuoAttention's released code gives its streaming heads (Xiao et al. 2024): 128 sink
// tokens and the 256 most recent; the score streaming_duo.
inline constexpr StreamingWindow kDuoAttentionCache{128, 256};

// The sizes `thresholds` give, the defaults where it names none.
StreamingWindow streaming_window(const Thresholds& thresholds);

}  // namespace headscan
