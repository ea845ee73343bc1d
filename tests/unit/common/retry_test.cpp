// When work waiting for rows another transaction holds is tried again (LockedRowsRetry).
#include "common/retry.hpp"

#include <gtest/gtest.h>

namespace hourglass {
namespace {

using namespace std::chrono_literals;
using Clock = LockedRowsRetry::Clock;

TEST(LockedRowsRetry, waits_250_ms_then_doubles_after_each_try_up_to_4_s) {
    LockedRowsRetry retry;
    const Clock::time_point start{};
    EXPECT_FALSE(retry.due(start + 1h)) << "nothing waits";
    retry.settled(start, /*waiting=*/true, /*tried_waiting=*/false);
    EXPECT_FALSE(retry.due(start + 249ms));
    EXPECT_TRUE(retry.due(start + 250ms));
    auto now = start + 250ms;
    for (const auto expected : {500ms, 1000ms, 2000ms, 4000ms, 4000ms}) {
        retry.settled(now, true, true);
        EXPECT_EQ(retry.at() - now, expected);
        now = retry.at();
    }
}

TEST(LockedRowsRetry, work_going_by_meanwhile_does_not_move_the_time) {
    LockedRowsRetry retry;
    const Clock::time_point start{};
    retry.settled(start, true, false);
    for (auto now = start; now < start + 250ms; now += 10ms) retry.settled(now, true, false);
    EXPECT_EQ(retry.at(), start + 250ms);
}

TEST(LockedRowsRetry, starts_over_at_250_ms_once_nothing_waits) {
    LockedRowsRetry retry;
    const Clock::time_point start{};
    retry.settled(start, true, false);
    retry.settled(start + 250ms, true, true);
    retry.settled(start + 750ms, false, true);
    EXPECT_FALSE(retry.waiting());
    EXPECT_FALSE(retry.due(start + 1h));
    retry.settled(start + 1s, true, false);
    EXPECT_EQ(retry.at(), start + 1250ms);
}

}  // namespace
}  // namespace hourglass
