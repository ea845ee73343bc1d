#include "loader/release_channel.hpp"

#include <spdlog/spdlog.h>

#include "amqp/channel.hpp"

namespace hourglass::loader {

namespace {

constexpr std::uint16_t kChannel = 1;

class AmqpReleaseChannel final : public ReleaseChannel {
public:
    explicit AmqpReleaseChannel(const amqp::ConnectionOptions& options)
        : connection_(options), channel_(connection_, kChannel) {
        channel_.enable_confirms();
    }
    std::uint64_t publish(const Message& message) override {
        return channel_.publish(message);
    }
    void hold_sends(bool hold) noexcept override { connection_.hold_sends(hold); }
    std::optional<amqp::Event> next_event(std::chrono::microseconds timeout) override {
        return connection_.next_event(timeout);
    }
    std::size_t frame_max() const override { return connection_.frame_max(); }

private:
    amqp::Connection connection_;
    amqp::Channel channel_;
};

}  // namespace

std::unique_ptr<ReleaseChannel> open_release_channel(amqp::ConnectionOptions options) {
    options.connection_name = "hourglass loader";
    auto channel = std::make_unique<AmqpReleaseChannel>(options);
    spdlog::info("loader: connected to RabbitMQ");
    return channel;
}

}  // namespace hourglass::loader
