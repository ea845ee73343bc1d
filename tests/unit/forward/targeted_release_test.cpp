// The forwarder's view of a released run (src/forward/forwarder.hpp): the target comes from the
// x-hourglass-exchange header, which is removed; everything else is released unchanged.
#include <gtest/gtest.h>

#include "forward/forwarder.hpp"

namespace hourglass::forward {
namespace {

Message forwarded_run(FieldValue target) {
    Message message;
    message.exchange = "hourglass.delay.forward";
    message.routing_key = "orders.created";
    message.body = std::string("{\"order\": 42}\0\xff", 15);
    message.properties.content_type = "application/json";
    message.properties.delivery_mode = 2;
    message.properties.headers = FieldTable{{"x-tenant", std::string("acme")},
                                            {"x-hourglass-exchange", std::move(target)},
                                            {"x-hourglass-id", std::string("job-1")},
                                            {"x-hourglass-run", std::int64_t{1}}};
    return message;
}

TEST(TargetedRelease, goes_to_the_named_exchange_without_the_header_otherwise_unchanged) {
    const auto run = forwarded_run(std::string("legacy.orders"));
    const auto release = targeted_release(run);
    ASSERT_TRUE(release);
    EXPECT_EQ(release->target, "legacy.orders");
    EXPECT_EQ(release->message.exchange, "legacy.orders");
    EXPECT_EQ(release->message.routing_key, run.routing_key);
    EXPECT_EQ(release->message.body, run.body);
    EXPECT_EQ(find_header(release->message.properties, "x-hourglass-exchange"), nullptr);
    auto expected = run.properties;
    remove_header(expected, "x-hourglass-exchange");
    EXPECT_EQ(release->message.properties, expected);
}

// The loader marks a run the audit observes with the last run of its release group; the mark is
// hourglass's own and never reaches the target.
TEST(TargetedRelease, a_run_observed_with_another_needs_no_copy_and_leaves_without_the_mark) {
    auto run = forwarded_run(std::string("legacy.orders"));
    EXPECT_FALSE(observed_with_another_run(run));
    const auto unmarked = targeted_release(run);
    set_header(run.properties, "x-hourglass-observed-with", std::string("job-9"));
    EXPECT_TRUE(observed_with_another_run(run));
    const auto release = targeted_release(run);
    ASSERT_TRUE(release && unmarked);
    EXPECT_EQ(find_header(release->message.properties, "x-hourglass-observed-with"), nullptr);
    EXPECT_EQ(release->message.properties, unmarked->message.properties);
}

TEST(TargetedRelease, nothing_without_a_usable_target) {
    EXPECT_FALSE(targeted_release(forwarded_run(std::string(""))));
    EXPECT_FALSE(targeted_release(forwarded_run(std::int32_t{5})));
    auto run = forwarded_run(std::string("x"));
    remove_header(run.properties, "x-hourglass-exchange");
    EXPECT_FALSE(targeted_release(run));
}

}  // namespace
}  // namespace hourglass::forward
