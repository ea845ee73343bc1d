#include "ingest/command_channel.hpp"

#include <spdlog/spdlog.h>

namespace hourglass::ingest {

namespace {

constexpr std::uint16_t kConsumeChannel = 1;
constexpr std::uint16_t kPublishChannel = 2;

class AmqpCommandChannel final : public CommandChannel {
public:
    AmqpCommandChannel(const amqp::ConnectionOptions& options, const std::string& queue,
                       std::uint16_t prefetch)
        : connection_(options) {
        connection_.open_channel(kConsumeChannel);
        connection_.open_channel(kPublishChannel);
        connection_.enable_confirms(kPublishChannel);
        connection_.set_prefetch(kConsumeChannel, prefetch);
        connection_.consume(kConsumeChannel, queue);
    }
    std::optional<amqp::Event> next_event(std::chrono::microseconds timeout) override {
        return connection_.next_event(timeout);
    }
    std::uint64_t publish(const Message& message) override {
        return connection_.publish(kPublishChannel, message);
    }
    void ack_through(std::uint64_t delivery_tag) override {
        connection_.ack(kConsumeChannel, delivery_tag, /*multiple=*/true);
    }
    void ack(std::uint64_t delivery_tag) override {
        connection_.ack(kConsumeChannel, delivery_tag, /*multiple=*/false);
    }
    std::size_t frame_max() const override { return connection_.frame_max(); }

private:
    amqp::Connection connection_;
};

}  // namespace

std::unique_ptr<CommandChannel> open_command_channel(amqp::ConnectionOptions options,
                                                     const std::string& queue,
                                                     std::uint16_t prefetch) {
    options.connection_name = "hourglass ingest";
    auto channel = std::make_unique<AmqpCommandChannel>(options, queue, prefetch);
    spdlog::info("ingest: consuming {}", queue);
    return channel;
}

}  // namespace hourglass::ingest
