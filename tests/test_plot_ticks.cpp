// The count axis of plots/layers.png ("heads per layer"): whole numbers only. Four equal steps of
// a count of 2 were labelled 0, 1, 1, 2, 2 (0.5 and 1.5 rounded for want of decimals).
#include <catch2/catch.hpp>

#include <vector>

#include "reports/plots.h"

using headscan::count_ticks;

TEST_CASE("plots: a count axis has whole-number ticks, at most five, one step apart", "[reports]") {
  CHECK(count_ticks(0) == std::vector<int>{0});
  CHECK(count_ticks(1) == std::vector<int>{0, 1});
  CHECK(count_ticks(2) == std::vector<int>{0, 1, 2});
  CHECK(count_ticks(4) == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(count_ticks(5) == std::vector<int>{0, 2, 4});
  CHECK(count_ticks(12) == std::vector<int>{0, 3, 6, 9, 12});
  CHECK(count_ticks(32) == std::vector<int>{0, 8, 16, 24, 32});
  for (int heads = 1; heads <= 200; ++heads) {
    const std::vector<int> ticks = count_ticks(heads);
    INFO(heads << " heads");
    CHECK(ticks.size() <= 5);
    CHECK(ticks.size() >= 2);
    CHECK(ticks.back() <= heads);
    CHECK(heads - ticks.back() < ticks[1]);  // the last tick is within one step of the top
  }
}
