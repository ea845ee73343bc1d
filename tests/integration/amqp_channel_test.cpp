// amqp::Channel (src/amqp/channel.hpp) against a real broker: one owner per channel number,
// closed when dropped so that its number can be opened again at once, and after the broker
// closed it (a refused declaration) reopened with what it had set up gone, while the
// connection and its other channels go on.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>

#include "amqp/channel.hpp"
#include "amqp/connection.hpp"
#include "hourglass/command.hpp"
#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

amqp::ConnectionOptions options(const std::string& url) {
    amqp::ConnectionOptions options;
    options.url = url;
    options.connection_name = "hourglass channel test";
    return options;
}

// Publishes one message to `queue` through the default exchange on `channel` (confirms on)
// and waits for its confirm: the connection and the channel work.
bool publish_is_confirmed(amqp::Connection& connection, amqp::Channel& channel,
                          const std::string& queue) {
    Message message;
    message.routing_key = queue;
    message.body = "ping";
    const auto sequence = channel.publish(message);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
    while (std::chrono::steady_clock::now() < deadline) {
        const auto event = connection.next_event(std::chrono::milliseconds{100});
        if (!event) continue;
        if (const auto* confirm = std::get_if<amqp::Confirm>(&*event)) {
            if (confirm->channel == channel.number() && confirm->delivery_tag >= sequence) {
                return confirm->ack;
            }
        }
    }
    return false;
}

class AmqpChannel : public ::testing::Test {
protected:
    void SetUp() override {
        url_ = env_or_skip("HOURGLASS_AMQP_URL");
        if (url_.empty()) GTEST_SKIP() << "HOURGLASS_AMQP_URL is not set (run through scripts/test)";
        queue_ = "hourglass.test.channel." + generate_uuid();
    }
    void TearDown() override {
        if (url_.empty()) return;
        amqp::Connection connection(options(url_));
        amqp::Channel channel(connection, 1);
        channel.delete_queue(queue_);
    }
    std::string url_;
    std::string queue_;
};

TEST_F(AmqpChannel, a_number_has_one_owner_at_a_time) {
    amqp::Connection connection(options(url_));
    amqp::Channel first(connection, 3);
    EXPECT_THROW(amqp::Channel(connection, 3), std::logic_error);
    EXPECT_THROW(amqp::Channel(connection, 0), std::logic_error);
    EXPECT_TRUE(first.is_open());
}

TEST_F(AmqpChannel, a_dropped_channel_is_closed_and_its_number_opens_again_at_once) {
    amqp::Connection connection(options(url_));
    for (int round = 0; round < 20; ++round) {
        amqp::Channel channel(connection, 5);
        channel.declare_queue(queue_, {{"x-queue-type", std::string("classic")}});
        // Without waiting for the broker's close-ok, opening the number again would be
        // "second 'channel.open' seen", a connection error.
    }
    amqp::Channel channel(connection, 5);
    channel.enable_confirms();
    EXPECT_TRUE(publish_is_confirmed(connection, channel, queue_));
}

TEST_F(AmqpChannel, a_channel_the_broker_closed_is_reopened_while_the_others_go_on) {
    amqp::Connection connection(options(url_));
    amqp::Channel declarations(connection, 1);
    amqp::Channel publishes(connection, 2);
    publishes.enable_confirms();
    declarations.declare_queue(queue_, {{"x-queue-type", std::string("classic")}});

    // The same queue with other arguments: the broker refuses it (406) and closes the channel.
    try {
        declarations.declare_queue(queue_, {{"x-max-length", std::int64_t{5}},
                                            {"x-queue-type", std::string("classic")}});
        FAIL() << "the broker took a queue redeclared with other arguments";
    } catch (const amqp::ChannelError& error) {
        EXPECT_EQ(error.reply_code(), 406);
        EXPECT_EQ(error.channel(), declarations.number());
    }
    EXPECT_FALSE(declarations.is_open());
    EXPECT_TRUE(publishes.is_open());
    EXPECT_TRUE(publish_is_confirmed(connection, publishes, queue_));

    declarations.reopen();
    EXPECT_TRUE(declarations.is_open());
    EXPECT_EQ(declarations.queue_message_count(queue_), std::optional<std::uint32_t>{1});
    // A passive declaration of a missing queue closes the channel too: it comes back open.
    EXPECT_EQ(declarations.queue_message_count(queue_ + ".missing"), std::nullopt);
    EXPECT_TRUE(declarations.is_open());
    EXPECT_EQ(declarations.purge_queue(queue_), std::optional<std::uint32_t>{1});
}

TEST_F(AmqpChannel, confirms_are_numbered_per_channel_and_start_again_on_reopen) {
    amqp::Connection connection(options(url_));
    amqp::Channel setup(connection, 1);
    setup.declare_queue(queue_, {{"x-queue-type", std::string("classic")}});
    amqp::Channel publishes(connection, 2);
    publishes.enable_confirms();
    Message message;
    message.routing_key = queue_;
    EXPECT_EQ(publishes.publish(message), 1u);
    EXPECT_EQ(publishes.publish(message), 2u);
    EXPECT_EQ(setup.publish(message), 0u) << "no confirms on this one";
    publishes.reopen();
    publishes.enable_confirms();
    EXPECT_EQ(publishes.publish(message), 1u);
}

}  // namespace
}  // namespace hourglass::testing
