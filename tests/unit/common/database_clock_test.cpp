// The one clock (src/common/database_clock.hpp): the host's clock until an offset is followed,
// then shifted by it, in both precisions, and shared by whoever holds it.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "common/database_clock.hpp"

namespace hourglass {
namespace {

using namespace std::chrono_literals;

TEST(DatabaseClock, is_the_hosts_clock_until_it_follows_an_offset) {
    const DatabaseClock clock;
    EXPECT_EQ(clock.offset(), 0us);
    const auto before = now_us();
    const auto read = clock.now_us();
    EXPECT_GE(read, before);
    EXPECT_LE(read, now_us());
}

TEST(DatabaseClock, follows_the_offset_it_is_given_in_both_precisions) {
    DatabaseClock clock;
    clock.follow({.offset = -90s});  // PostgreSQL's clock is 90 s behind this host's
    const auto before = now_us();
    const auto read_us = clock.now_us();
    const auto read_ms = clock.now_ms();
    const auto after = now_us();
    // To the microsecond: it runs on the monotonic clock from when it followed (below), each
    // clock cut to the microsecond on its own.
    EXPECT_GE(read_us, before - 90s - 1us);
    EXPECT_LE(read_us, after - 90s + 1us);
    EXPECT_GE(read_ms, std::chrono::floor<Milliseconds>(before - 90s));
    EXPECT_LE(read_ms, after - 90s);

    clock.follow({.offset = 2500us});
    EXPECT_EQ(clock.offset(), 2500us);
    EXPECT_GE(clock.now_us(), after + 2500us);
}

TEST(DatabaseClock, one_clock_shared_is_followed_by_every_holder) {
    const auto clock = std::make_shared<DatabaseClock>();
    const std::shared_ptr<const DatabaseClock> reader = clock;
    clock->follow({.offset = 1h});
    EXPECT_EQ(reader->offset(), 1h);
    EXPECT_GE(reader->now_ms(), std::chrono::floor<Milliseconds>(now_us()) + 59min);
}

// A step of the host's clock between two measurements moves nothing: the clock runs on the
// monotonic clock from the last measurement. Before, a forward step released runs up to the
// step early until the next heartbeat measured it away.
TEST(DatabaseClock, runs_on_the_monotonic_clock_between_measurements) {
    DatabaseClock clock;
    const auto system = std::chrono::time_point_cast<std::chrono::microseconds>(
        std::chrono::sys_days{std::chrono::year{2026} / 12 / 6});
    const std::chrono::steady_clock::time_point steady{std::chrono::hours{100}};
    clock.follow({.offset = 250ms}, system, steady);
    EXPECT_EQ(clock.now_us_at(steady), system + 250ms);
    EXPECT_EQ(clock.now_us_at(steady + 1500ms), system + 1750ms);
    // The host's clock stepped 5 s ahead meanwhile: the next measurement says 5 s less.
    clock.follow({.offset = 250ms - 5s}, system + 2s + 5s, steady + 2s);
    EXPECT_EQ(clock.now_us_at(steady + 2s), system + 2250ms);
    EXPECT_EQ(clock.offset(), 250ms - 5s);
}

// A measurement bounds PostgreSQL's clock from below (it never runs ahead, so nothing is
// published early) and its round trip bounds it from above: what stamps an observation reads
// the upper bound, so that a release seen after a quicker measurement than the one its publish
// followed never reads as before its due time (it read 1.3 ms early in a soak on a busy host).
TEST(DatabaseClock, the_latest_it_may_be_is_the_last_measurements_round_trip_ahead) {
    DatabaseClock clock;
    const auto system = std::chrono::time_point_cast<std::chrono::microseconds>(
        std::chrono::sys_days{std::chrono::year{2026} / 12 / 6});
    const std::chrono::steady_clock::time_point steady{std::chrono::hours{100}};
    clock.follow({.offset = 250ms, .round_trip = 3ms}, system, steady);
    EXPECT_EQ(clock.now_us_at(steady + 1s), system + 1250ms);
    EXPECT_EQ(clock.latest_us_at(steady + 1s), system + 1253ms);
    clock.follow({.offset = 251ms, .round_trip = 200us}, system + 2s, steady + 2s);
    EXPECT_EQ(clock.latest_us_at(steady + 2s), system + 2251200us);
}

}  // namespace
}  // namespace hourglass
