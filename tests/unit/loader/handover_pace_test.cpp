// HandoverPace (src/loader/handover_pace.hpp) with plain values: a wait for a confirm longer
// than --slow-confirm makes the broker slow until confirms have been quick for kCalmAfter; a
// wait within it, or the option off, never does.
#include "loader/handover_pace.hpp"

#include <gtest/gtest.h>

namespace hourglass::loader {
namespace {

using namespace std::chrono_literals;

const HandoverPace::SteadyTime kStart{std::chrono::hours{1}};

TEST(HandoverPace, a_wait_longer_than_the_threshold_makes_the_broker_slow_until_calm_again) {
    HandoverPace pace(20ms);
    EXPECT_FALSE(pace.slow(kStart));
    EXPECT_FALSE(pace.waited(20ms, kStart)) << "a wait of the threshold itself is quick";
    EXPECT_FALSE(pace.slow(kStart));
    EXPECT_TRUE(pace.waited(21ms, kStart)) << "starts a slow spell";
    EXPECT_TRUE(pace.slow(kStart));
    EXPECT_TRUE(pace.slow(kStart + HandoverPace::kCalmAfter - 1us));
    EXPECT_FALSE(pace.slow(kStart + HandoverPace::kCalmAfter));
}

TEST(HandoverPace, each_slow_wait_extends_the_spell_and_only_the_first_starts_it) {
    HandoverPace pace(20ms);
    EXPECT_TRUE(pace.waited(50ms, kStart));
    EXPECT_FALSE(pace.waited(50ms, kStart + 800ms)) << "the same spell";
    EXPECT_FALSE(pace.waited(5ms, kStart + 900ms)) << "a quick wait does not end it";
    EXPECT_TRUE(pace.slow(kStart + 1700ms));
    EXPECT_FALSE(pace.slow(kStart + 1800ms));
    EXPECT_TRUE(pace.waited(50ms, kStart + 1800ms)) << "a new spell";
}

TEST(HandoverPace, off_never_holds) {
    HandoverPace pace(std::nullopt);
    EXPECT_FALSE(pace.waited(10s, kStart));
    EXPECT_FALSE(pace.slow(kStart));
}

}  // namespace
}  // namespace hourglass::loader
