// Live leases (reference §6): when an instance may publish its claims, and when it must forget
// them.
#include <gtest/gtest.h>

#include "loader/lease_keeper.hpp"

namespace hourglass::loader {
namespace {

using namespace std::chrono_literals;
const LeaseKeeper::Clock::time_point t0{std::chrono::hours{1}};

TEST(LeaseKeeper, publishes_nothing_before_the_first_heartbeat) {
    LeaseKeeper keeper;
    EXPECT_FALSE(keeper.may_publish(t0));
    keeper.beat_succeeded(t0);
    EXPECT_TRUE(keeper.may_publish(t0 + 100ms));
}

TEST(LeaseKeeper, stops_publishing_before_others_could_take_its_claims_over) {
    LeaseKeeper keeper;
    keeper.beat_succeeded(t0);
    EXPECT_TRUE(keeper.may_publish(t0 + kPublishGrace - 1ms));
    EXPECT_FALSE(keeper.may_publish(t0 + kPublishGrace));
    EXPECT_LT(kPublishGrace + 500ms, kTakeoverAfter) << "room for a heartbeat's round trip";
    EXPECT_FALSE(keeper.claims_lost()) << "silent, but not yet for the takeover time";
}

TEST(LeaseKeeper, regular_heartbeats_keep_publishing_and_keep_the_claims) {
    LeaseKeeper keeper;
    for (int i = 0; i < 100; ++i) {
        const auto now = t0 + i * kHeartbeatEvery;
        keeper.beat_succeeded(now);
        EXPECT_TRUE(keeper.may_publish(now + kHeartbeatEvery - 1ms));
    }
    EXPECT_FALSE(keeper.claims_lost());
}

TEST(LeaseKeeper, a_silence_as_long_as_the_takeover_time_loses_the_claims_until_forgotten) {
    LeaseKeeper keeper;
    keeper.beat_succeeded(t0);
    keeper.beat_succeeded(t0 + kTakeoverAfter);  // the database was unreachable meanwhile
    EXPECT_TRUE(keeper.claims_lost());
    EXPECT_FALSE(keeper.may_publish(t0 + kTakeoverAfter + 1ms))
        << "fresh again, but its runs in memory may be another instance's now";
    keeper.claims_forgotten();
    EXPECT_TRUE(keeper.may_publish(t0 + kTakeoverAfter + 1ms));
}

TEST(LeaseKeeper, a_silence_shorter_than_the_takeover_time_only_pauses_publishing) {
    LeaseKeeper keeper;
    keeper.beat_succeeded(t0);
    EXPECT_FALSE(keeper.may_publish(t0 + 2500ms));
    keeper.beat_succeeded(t0 + 2500ms);
    EXPECT_FALSE(keeper.claims_lost());
    EXPECT_TRUE(keeper.may_publish(t0 + 2600ms));
}

}  // namespace
}  // namespace hourglass::loader
