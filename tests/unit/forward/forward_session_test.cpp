// The forward session (src/forward/forward_session.hpp) against a scripted broker: each run goes
// to its target with a copy of its headers to the audit, what the target cannot route or
// refuses goes to <prefix>.unroutable, and a delivery is acked once, only after every publish it
// caused is confirmed; a closed publish channel loses nothing and names the target it refused.
#include "forward/forward_session.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "hourglass/command.hpp"
#include "support/prometheus_text.hpp"

namespace hourglass::forward {
namespace {

using namespace std::chrono_literals;
namespace prom = hourglass::testing::prometheus;

constexpr std::uint16_t kPublishChannel = 2;

struct Published {
    std::uint64_t sequence = 0;
    Message message;
    bool mandatory = false;
};

// The broker, scripted: the test queues the events next_event() returns, and reads what was
// published and acked. A publish channel closed by the broker numbers publishes from 1 again.
class ScriptedForwardChannel final : public ForwardChannel {
public:
    std::optional<amqp::Event> next_event(std::chrono::microseconds) override {
        if (close_publish_channel) {
            close_publish_channel = false;
            throw amqp::ChannelError("NOT_FOUND - no exchange 'gone'", 404, kPublishChannel);
        }
        if (events.empty()) return std::nullopt;
        auto event = std::move(events.front());
        events.pop_front();
        return event;
    }
    std::uint64_t publish(const Message& message, bool mandatory) override {
        published.push_back({++sequence_, message, mandatory});
        return sequence_;
    }
    void ack(std::uint64_t delivery_tag) override { acked.push_back(delivery_tag); }
    std::uint16_t publish_channel() const override { return kPublishChannel; }
    void reopen_publishing() override {
        ++reopened;
        sequence_ = 0;
    }

    void deliver(std::uint64_t tag, Message message) {
        amqp::Delivery delivery;
        delivery.channel = 1;
        delivery.delivery_tag = tag;
        delivery.message = std::move(message);
        events.emplace_back(std::move(delivery));
    }
    void confirm(std::uint64_t sequence, bool ack = true, bool multiple = false) {
        events.emplace_back(amqp::Confirm{kPublishChannel, sequence, multiple, ack});
    }
    void return_unroutable(const Message& message) {
        events.emplace_back(amqp::Returned{kPublishChannel, 312, message});
    }
    // What went out after the first `from` publishes, by exchange (the default exchange by the
    // queue it routes to).
    std::vector<std::string> destinations(std::size_t from = 0) const {
        std::vector<std::string> out;
        for (auto i = from; i < published.size(); ++i) {
            const auto& m = published[i].message;
            out.push_back(m.exchange.empty() ? "queue " + m.routing_key : m.exchange);
        }
        return out;
    }

    std::deque<amqp::Event> events;
    bool close_publish_channel = false;
    std::vector<Published> published;
    std::vector<std::uint64_t> acked;
    int reopened = 0;

private:
    std::uint64_t sequence_ = 0;
};

Message forwarded_run(const std::string& id, const std::string& target) {
    Message message;
    message.exchange = "hourglass.delay.forward";
    message.routing_key = "orders.created";
    message.body = "{\"order\": 42}";
    message.properties.headers = FieldTable{{std::string(header::kExchange), target},
                                            {std::string(header::kId), id},
                                            {std::string(header::kRun), std::int64_t{1}}};
    return message;
}

class ForwardSessionTest : public ::testing::Test {
protected:
    ForwardSessionTest() : metrics_(registry_), session_(options_, metrics_, broker_) {}

    // Lets the session handle every scripted event (and one more poll for a suspect).
    void drain() {
        while (!broker_.events.empty() || broker_.close_publish_channel) session_.poll(stop_.get_token(), 0ms);
        session_.poll(stop_.get_token(), 0ms);
    }
    double metric(const std::string& name) const {
        return prom::parse(registry_.render_prometheus()).value(name);
    }

    ForwarderOptions options_{{}, delay::TopologyNames("hourglass")};
    metrics::Registry registry_;
    ForwarderMetrics metrics_;
    ScriptedForwardChannel broker_;
    ForwardSession session_;
    std::stop_source stop_;
};

TEST_F(ForwardSessionTest, a_run_goes_to_its_target_with_an_audit_copy_and_is_acked_after_both_confirms) {
    broker_.deliver(7, forwarded_run("job-1", "legacy.orders"));
    drain();
    ASSERT_EQ(broker_.destinations(), (std::vector<std::string>{"legacy.orders", "queue hourglass.delay.audit"}));
    EXPECT_TRUE(broker_.published[0].mandatory);
    EXPECT_EQ(find_header(broker_.published[0].message.properties, header::kExchange), nullptr);
    EXPECT_EQ(broker_.published[0].message.body, "{\"order\": 42}");
    EXPECT_TRUE(broker_.published[1].message.body.empty());  // the audit reads headers only

    broker_.confirm(1);
    drain();
    EXPECT_TRUE(broker_.acked.empty()) << "acked before the audit copy was confirmed";
    broker_.confirm(2);
    drain();
    EXPECT_EQ(broker_.acked, (std::vector<std::uint64_t>{7}));
    EXPECT_EQ(session_.in_hand(), 0u);
    EXPECT_EQ(metric("hourglass_releases_forwarded_total"), 1);
}

TEST_F(ForwardSessionTest, a_run_observed_with_another_takes_no_audit_copy) {
    auto run = forwarded_run("job-1", "legacy.orders");
    set_header(run.properties, std::string(header::kObservedWith), std::string("job-9"));
    broker_.deliver(1, std::move(run));
    drain();
    ASSERT_EQ(broker_.destinations(), (std::vector<std::string>{"legacy.orders"}));
    EXPECT_EQ(find_header(broker_.published[0].message.properties, header::kObservedWith), nullptr);
    broker_.confirm(1);
    drain();
    EXPECT_EQ(broker_.acked, (std::vector<std::uint64_t>{1}));
}

TEST_F(ForwardSessionTest, what_the_target_cannot_route_goes_to_unroutable_before_the_ack) {
    broker_.deliver(3, forwarded_run("job-1", "no.bindings"));
    drain();
    broker_.return_unroutable(broker_.published[0].message);
    broker_.confirm(2, true, /*multiple=*/true);
    drain();
    ASSERT_EQ(broker_.destinations(2), (std::vector<std::string>{"hourglass.unroutable"}));
    EXPECT_TRUE(broker_.acked.empty()) << "acked before the unroutable copy was confirmed";
    broker_.confirm(3);
    drain();
    EXPECT_EQ(broker_.acked, (std::vector<std::uint64_t>{3}));
    EXPECT_EQ(metric("hourglass_releases_forwarded_total"), 0);
    EXPECT_EQ(metric("hourglass_releases_forwarded_unroutable_total"), 1);
}

TEST_F(ForwardSessionTest, a_target_that_refuses_sends_the_run_to_unroutable) {
    broker_.deliver(1, forwarded_run("job-1", "full.queue"));
    drain();
    broker_.confirm(1, /*ack=*/false);
    broker_.confirm(2);
    drain();
    ASSERT_EQ(broker_.destinations(2), (std::vector<std::string>{"hourglass.unroutable"}));
    broker_.confirm(3);
    drain();
    EXPECT_EQ(broker_.acked, (std::vector<std::uint64_t>{1}));
    EXPECT_EQ(metric("hourglass_releases_forwarded_unroutable_total"), 1);
}

TEST_F(ForwardSessionTest, a_run_without_a_target_goes_to_unroutable_and_keeps_no_mark) {
    auto run = forwarded_run("job-1", "");
    set_header(run.properties, std::string(header::kObservedWith), std::string("job-9"));
    broker_.deliver(1, std::move(run));
    drain();
    ASSERT_EQ(broker_.destinations(), (std::vector<std::string>{"hourglass.unroutable"}));
    EXPECT_EQ(find_header(broker_.published[0].message.properties, header::kObservedWith), nullptr);
    broker_.confirm(1);
    drain();
    EXPECT_EQ(broker_.acked, (std::vector<std::uint64_t>{1}));
}

// The broker closes the publish channel when one target is gone, and every publish still
// unconfirmed on it is lost: the audit copies are sent again, the targets tried one at a time,
// so that the one refused goes to unroutable and the others to their targets, each acked once.
TEST_F(ForwardSessionTest, a_closed_publish_channel_loses_nothing_and_finds_the_target_it_refused) {
    broker_.deliver(1, forwarded_run("job-1", "legacy.orders"));
    broker_.deliver(2, forwarded_run("job-2", "gone"));
    drain();
    ASSERT_EQ(broker_.published.size(), 4u);  // two targets, two audit copies
    broker_.close_publish_channel = true;
    drain();
    EXPECT_EQ(broker_.reopened, 1);
    // The audit copies again, then the first suspect alone.
    ASSERT_EQ(broker_.destinations(4), (std::vector<std::string>{"queue hourglass.delay.audit",
                                                                 "queue hourglass.delay.audit",
                                                                 "legacy.orders"}));
    broker_.confirm(3, true, /*multiple=*/true);  // job-1's target fine: the next suspect goes
    drain();
    ASSERT_EQ(broker_.destinations(7), (std::vector<std::string>{"gone"}));
    EXPECT_EQ(broker_.acked, (std::vector<std::uint64_t>{1}));
    broker_.close_publish_channel = true;  // the broker refuses the probe: job-2's target
    drain();
    EXPECT_EQ(broker_.reopened, 2);
    ASSERT_EQ(broker_.destinations(8), (std::vector<std::string>{"hourglass.unroutable"}));
    broker_.confirm(1);
    drain();
    EXPECT_EQ(broker_.acked, (std::vector<std::uint64_t>{1, 2}));
    EXPECT_EQ(session_.in_hand(), 0u);
    EXPECT_EQ(metric("hourglass_releases_forwarded_total"), 1);
    EXPECT_EQ(metric("hourglass_releases_forwarded_unroutable_total"), 1);
}

// A nack of hourglass's own publish is tried again, but not without bound: past
// kMaxFailuresInARow the session gives up and the connection is made again.
TEST_F(ForwardSessionTest, own_publishes_refused_again_and_again_end_the_session) {
    broker_.deliver(1, forwarded_run("job-1", ""));  // to unroutable (1), its audit copy (2)
    drain();
    std::uint64_t last = 1;
    for (int i = 1; i <= ForwardSession::kMaxFailuresInARow; ++i) {
        broker_.confirm(last, /*ack=*/false);
        drain();
        ASSERT_EQ(broker_.published.size(), static_cast<std::size_t>(2 + i)) << "not tried again";
        EXPECT_EQ(broker_.destinations(broker_.published.size() - 1),
                  (std::vector<std::string>{"hourglass.unroutable"}));
        last = broker_.published.size();
    }
    broker_.confirm(last, /*ack=*/false);
    EXPECT_THROW(drain(), amqp::ConnectionError);
    EXPECT_TRUE(broker_.acked.empty());
}

TEST_F(ForwardSessionTest, a_channel_error_on_another_channel_is_not_taken_for_a_refused_target) {
    class ConsumeClosed final : public ForwardChannel {
    public:
        std::optional<amqp::Event> next_event(std::chrono::microseconds) override {
            throw amqp::ChannelError("PRECONDITION_FAILED - unknown delivery tag", 406, 1);
        }
        std::uint64_t publish(const Message&, bool) override { return 1; }
        void ack(std::uint64_t) override {}
        std::uint16_t publish_channel() const override { return kPublishChannel; }
        void reopen_publishing() override { ADD_FAILURE() << "reopened the publish channel"; }
    } consume_closed;
    ForwardSession session(options_, metrics_, consume_closed);
    EXPECT_THROW(session.poll(stop_.get_token(), 0ms), amqp::ChannelError);
}

// Stopping: nothing new is taken, what is in hand is finished.
TEST_F(ForwardSessionTest, a_stop_takes_no_new_run_and_finishes_those_in_hand) {
    broker_.deliver(1, forwarded_run("job-1", "legacy.orders"));
    drain();
    broker_.deliver(2, forwarded_run("job-2", "legacy.orders"));
    broker_.confirm(2, true, /*multiple=*/true);
    stop_.request_stop();
    session_.run(stop_.get_token());
    EXPECT_EQ(broker_.acked, (std::vector<std::uint64_t>{1}));
    EXPECT_EQ(broker_.published.size(), 2u) << "a run was taken after the stop";
    EXPECT_EQ(session_.in_hand(), 0u);
}

}  // namespace
}  // namespace hourglass::forward
