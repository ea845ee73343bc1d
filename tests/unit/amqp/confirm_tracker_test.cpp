// ConfirmTracker: every way the broker confirms publishes on a confirm channel.
#include <gtest/gtest.h>

#include <string>

#include "amqp/confirm_tracker.hpp"

namespace hourglass::amqp {
namespace {

ConfirmTracker<std::string> tracker_with(int publishes) {
    ConfirmTracker<std::string> tracker;
    for (int i = 1; i <= publishes; ++i) tracker.published(i, "p" + std::to_string(i));
    return tracker;
}

std::vector<std::string> values(const std::vector<ConfirmTracker<std::string>::Settled>& settled) {
    std::vector<std::string> out;
    for (const auto& s : settled) out.push_back(s.value);
    return out;
}

Confirm ack(std::uint64_t tag, bool multiple = false) { return Confirm{1, tag, multiple, true}; }
Confirm nack(std::uint64_t tag, bool multiple = false) { return Confirm{1, tag, multiple, false}; }

TEST(ConfirmTracker, a_single_ack_settles_only_its_own_publish) {
    auto tracker = tracker_with(3);
    EXPECT_EQ(values(tracker.settle(ack(3))), std::vector<std::string>{"p3"});
    EXPECT_EQ(tracker.size(), 2u) << "earlier publishes are not covered by a single ack";
    EXPECT_TRUE(tracker.contains(1));
}

TEST(ConfirmTracker, multiple_settles_every_open_publish_up_to_the_tag) {
    auto tracker = tracker_with(5);
    tracker.settle(ack(2));
    EXPECT_EQ(values(tracker.settle(ack(4, true))), (std::vector<std::string>{"p1", "p3", "p4"}));
    EXPECT_EQ(values(tracker.take_unsettled()), std::vector<std::string>{"p5"});
    EXPECT_TRUE(tracker.empty());
}

TEST(ConfirmTracker, out_of_order_and_repeated_confirms_settle_each_publish_once) {
    auto tracker = tracker_with(4);
    EXPECT_EQ(values(tracker.settle(ack(4))), std::vector<std::string>{"p4"});
    EXPECT_EQ(values(tracker.settle(ack(2))), std::vector<std::string>{"p2"});
    EXPECT_TRUE(tracker.settle(ack(2)).empty()) << "a repeated confirm settles nothing";
    EXPECT_TRUE(tracker.settle(ack(9)).empty()) << "an unknown tag settles nothing";
    EXPECT_EQ(values(tracker.settle(ack(4, true))), (std::vector<std::string>{"p1", "p3"}));
    EXPECT_TRUE(tracker.empty());
}

TEST(ConfirmTracker, nacks_are_reported_as_refused) {
    auto tracker = tracker_with(3);
    const auto refused = tracker.settle(nack(2, true));
    ASSERT_EQ(refused.size(), 2u);
    EXPECT_FALSE(refused[0].ack);
    EXPECT_FALSE(refused[1].ack);
    const auto accepted = tracker.settle(ack(3));
    ASSERT_EQ(accepted.size(), 1u);
    EXPECT_TRUE(accepted[0].ack);
}

TEST(ConfirmTracker, a_return_marks_the_oldest_matching_open_publish) {
    ConfirmTracker<std::string> tracker;
    tracker.published(1, "job-a");
    tracker.published(2, "job-b");
    tracker.published(3, "job-b");
    EXPECT_TRUE(tracker.mark_returned([](const std::string& v) { return v == "job-b"; }));
    EXPECT_FALSE(tracker.mark_returned([](const std::string& v) { return v == "job-c"; }));
    const auto settled = tracker.settle(ack(3, true));
    ASSERT_EQ(settled.size(), 3u);
    EXPECT_FALSE(settled[0].returned);
    EXPECT_TRUE(settled[1].returned);
    EXPECT_FALSE(settled[2].returned) << "one return marks one publish";
}

TEST(ConfirmTracker, after_a_reconnect_numbering_starts_again_without_stale_entries) {
    auto tracker = tracker_with(3);
    tracker.settle(ack(1));
    EXPECT_EQ(values(tracker.take_unsettled()), (std::vector<std::string>{"p2", "p3"}));
    tracker.published(1, "new1");
    EXPECT_EQ(values(tracker.settle(ack(1, true))), std::vector<std::string>{"new1"});
}

}  // namespace
}  // namespace hourglass::amqp
