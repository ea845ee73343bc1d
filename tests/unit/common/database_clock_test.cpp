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
    clock.follow(-90s);  // PostgreSQL's clock is 90 s behind this host's
    const auto before = now_us();
    const auto read_us = clock.now_us();
    const auto read_ms = clock.now_ms();
    const auto after = now_us();
    EXPECT_GE(read_us, before - 90s);
    EXPECT_LE(read_us, after - 90s);
    EXPECT_GE(read_ms, std::chrono::floor<Milliseconds>(before - 90s));
    EXPECT_LE(read_ms, after - 90s);

    clock.follow(2500us);
    EXPECT_EQ(clock.offset(), 2500us);
    EXPECT_GE(clock.now_us(), after + 2500us);
}

TEST(DatabaseClock, one_clock_shared_is_followed_by_every_holder) {
    const auto clock = std::make_shared<DatabaseClock>();
    const std::shared_ptr<const DatabaseClock> reader = clock;
    clock->follow(1h);
    EXPECT_EQ(reader->offset(), 1h);
    EXPECT_GE(reader->now_ms(), std::chrono::floor<Milliseconds>(now_us()) + 59min);
}

}  // namespace
}  // namespace hourglass
