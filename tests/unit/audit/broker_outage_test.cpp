// Releases the broker dead-lettered while it went down are doubted: a classic queue
// dead-letters once, into the queues still running while the broker shuts down, so the audit's
// copy does not prove the consumers' (audit::released_while_the_broker_went_down).
#include <gtest/gtest.h>

#include <deque>

#include "audit/audit_consumer.hpp"
#include "released_copies.hpp"

namespace hourglass::audit {
namespace {

using namespace std::chrono_literals;
using testing::death;

const TimePoint kLost{std::chrono::sys_days{std::chrono::year{2026} / 11 / 25}.time_since_epoch() + 12h};

Message dead_lettered(FieldArray deaths) {
    Message message;
    message.properties.headers = FieldTable{{"x-hourglass-id", std::string("a")},
                                            {"x-death", std::move(deaths)}};
    return message;
}

TEST(BrokerOutage, reads_the_time_of_the_newest_x_death_entry) {
    EXPECT_EQ(dead_lettered_at(dead_lettered({death(1795348800), death(1)})),
              TimePoint{std::chrono::seconds{1795348800}});
    EXPECT_EQ(dead_lettered_at(Message{}), std::nullopt);
    EXPECT_EQ(dead_lettered_at(dead_lettered({})), std::nullopt);
    EXPECT_EQ(dead_lettered_at(dead_lettered({std::string("not a table")})), std::nullopt);
    EXPECT_EQ(dead_lettered_at(dead_lettered({FieldTable{{"time", std::string("noon")}}})), std::nullopt);
    EXPECT_EQ(dead_lettered_at(dead_lettered({death(~std::uint64_t{0})})), std::nullopt);
}

TEST(BrokerOutage, no_outage_or_no_time_doubts_nothing) {
    EXPECT_FALSE(released_while_the_broker_went_down(kLost, {}));
    EXPECT_FALSE(released_while_the_broker_went_down(std::nullopt, {{kLost, kLost + 12s}}));
}

TEST(BrokerOutage, doubts_what_was_dead_lettered_from_the_margin_before_the_loss_until_back) {
    const std::deque<BrokerOutage> outages{{kLost, kLost + 12s}};
    const auto earliest = kLost - kOutageMargin - 1s;  // x-death times are whole seconds
    EXPECT_FALSE(released_while_the_broker_went_down(earliest - 1ms, outages));
    EXPECT_TRUE(released_while_the_broker_went_down(earliest, outages));
    EXPECT_TRUE(released_while_the_broker_went_down(kLost, outages));
    EXPECT_TRUE(released_while_the_broker_went_down(kLost + 12s, outages));
    // The re-send of a doubted run is dead-lettered after the audit is back: recorded.
    EXPECT_FALSE(released_while_the_broker_went_down(kLost + 12s + 1ms, outages));
}

TEST(BrokerOutage, an_outage_not_over_doubts_everything_after_its_start) {
    const std::deque<BrokerOutage> outages{{kLost, std::nullopt}};
    EXPECT_TRUE(released_while_the_broker_went_down(kLost + 1h, outages));
    EXPECT_FALSE(released_while_the_broker_went_down(kLost - 3s, outages));
}

TEST(BrokerOutage, every_remembered_outage_counts_and_the_time_between_them_does_not) {
    const std::deque<BrokerOutage> outages{{kLost, kLost + 5s}, {kLost + 1min, kLost + 1min + 5s}};
    EXPECT_TRUE(released_while_the_broker_went_down(kLost + 3s, outages));
    EXPECT_FALSE(released_while_the_broker_went_down(kLost + 30s, outages));
    EXPECT_TRUE(released_while_the_broker_went_down(kLost + 1min + 1s, outages));
}

}  // namespace
}  // namespace hourglass::audit
