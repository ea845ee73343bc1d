#include "forward/forward_channel.hpp"

#include <spdlog/spdlog.h>

#include "amqp/channel.hpp"

namespace hourglass::forward {

namespace {

constexpr std::uint16_t kConsumeChannel = 1;
constexpr std::uint16_t kPublishChannel = 2;

class AmqpForwardChannel final : public ForwardChannel {
public:
    AmqpForwardChannel(const amqp::ConnectionOptions& options, const std::string& queue,
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
    std::uint64_t publish(const Message& message, bool mandatory) override {
        return publish_.publish(message, mandatory);
    }
    void ack(std::uint64_t delivery_tag) override { consume_.ack(delivery_tag); }
    std::uint16_t publish_channel() const override { return publish_.number(); }
    void reopen_publishing() override {
        publish_.reopen();
        publish_.enable_confirms();
    }

private:
    amqp::Connection connection_;
    amqp::Channel consume_;
    amqp::Channel publish_;
};

}  // namespace

std::unique_ptr<ForwardChannel> open_forward_channel(amqp::ConnectionOptions options,
                                                     const std::string& queue,
                                                     std::uint16_t prefetch) {
    options.connection_name = "hourglass forward";
    auto channel = std::make_unique<AmqpForwardChannel>(options, queue, prefetch);
    spdlog::info("forward: consuming {}", queue);
    return channel;
}

}  // namespace hourglass::forward
