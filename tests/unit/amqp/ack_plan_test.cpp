// Acks around deliveries that still wait (plan_acks).
#include "amqp/ack_plan.hpp"

#include <gtest/gtest.h>

namespace hourglass::amqp {
namespace {

TEST(AckPlan, with_nothing_waiting_one_ack_goes_through_the_highest_tag) {
    const auto plan = plan_acks({3, 1, 2}, std::nullopt);
    EXPECT_EQ(plan.through, 3u);
    EXPECT_TRUE(plan.one_by_one.empty());
}

TEST(AckPlan, tags_after_the_first_waiting_one_are_acked_one_by_one) {
    const auto plan = plan_acks({1, 2, 4, 6}, 3u);
    EXPECT_EQ(plan.through, 2u);
    EXPECT_EQ(plan.one_by_one, (std::vector<std::uint64_t>{4, 6}));
}

TEST(AckPlan, nothing_below_the_first_waiting_one_means_no_ack_through) {
    const auto plan = plan_acks({5}, 2u);
    EXPECT_FALSE(plan.through);
    EXPECT_EQ(plan.one_by_one, (std::vector<std::uint64_t>{5}));
    EXPECT_FALSE(plan_acks({}, std::nullopt).through);
}

}  // namespace
}  // namespace hourglass::amqp
