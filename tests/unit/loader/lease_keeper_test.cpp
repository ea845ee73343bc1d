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

// Fencing: a long silence alone loses nothing (the registration says whether others took the
// claims); a lost registration stops publishing until the claims are forgotten and a beat of
// the new registration succeeds.
TEST(LeaseKeeper, a_long_silence_with_the_registration_in_place_keeps_the_claims) {
    LeaseKeeper keeper;
    keeper.beat_succeeded(t0);
    keeper.beat_succeeded(t0 + kTakeoverAfter + 2s);
    EXPECT_FALSE(keeper.claims_lost());
    EXPECT_TRUE(keeper.may_publish(t0 + kTakeoverAfter + 2s + 1ms));
}

TEST(LeaseKeeper, a_lost_registration_stops_publishing_until_forgotten_and_beating_again) {
    LeaseKeeper keeper;
    keeper.beat_succeeded(t0);
    keeper.registration_lost();
    EXPECT_TRUE(keeper.claims_lost());
    EXPECT_FALSE(keeper.may_publish(t0 + 1ms)) << "its runs in memory may be another instance's now";
    keeper.claims_forgotten();
    EXPECT_FALSE(keeper.may_publish(t0 + 2ms)) << "no beat of its new registration yet";
    keeper.beat_succeeded(t0 + 3ms);
    EXPECT_TRUE(keeper.may_publish(t0 + 4ms));
}

// The grace counts from when a beat was sent: a beat held up in PostgreSQL is stamped when it
// runs, never earlier, so the instance never thinks itself fresher than others see it.
TEST(LeaseKeeper, a_late_reply_to_an_older_beat_does_not_extend_the_grace) {
    LeaseKeeper keeper;
    keeper.beat_succeeded(t0 + 1s);
    keeper.beat_succeeded(t0);  // sent earlier, its reply came later
    EXPECT_FALSE(keeper.may_publish(t0 + 1s + kPublishGrace));
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
