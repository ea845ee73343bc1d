#include "ingest/command_channel.hpp"

#include <spdlog/spdlog.h>

#include "amqp/channel.hpp"

namespace hourglass::ingest {

namespace {

constexpr std::uint16_t kConsumeChannel = 1;
constexpr std::uint16_t kPublishChannel = 2;

class AmqpCommandChannel final : public CommandChannel {
public:
    AmqpCommandChannel(const amqp::ConnectionOptions& options, const std::string& queue,
                       std::uint16_t prefetch)
        : connection_(options),
          consume_(connection_, kConsumeChannel),
          publish_(connection_, kPublishChannel) {
        publish_.enable_confirms();
        consume_.set_prefetch(prefetch);
        consume_.consume(queue);
    }
    std::optional<amqp::Event> next_event(std::chrono::microseconds timeout) override {
        return connection_.next_event(timeout);
    }
    std::uint64_t publish(const Message& message) override {
        return publish_.publish(message);
    }
    void ack_through(std::uint64_t delivery_tag) override {
        consume_.ack(delivery_tag, /*multiple=*/true);
    }
    void ack(std::uint64_t delivery_tag) override {
        consume_.ack(delivery_tag, /*multiple=*/false);
    }
    std::size_t frame_max() const override { return connection_.frame_max(); }

private:
    amqp::Connection connection_;
    amqp::Channel consume_;
    amqp::Channel publish_;
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
