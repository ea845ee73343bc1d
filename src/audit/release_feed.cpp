#include "audit/release_feed.hpp"

#include <spdlog/spdlog.h>

#include "amqp/channel.hpp"

namespace hourglass::audit {

namespace {

constexpr std::uint16_t kChannel = 1;

class AmqpReleaseFeed final : public ReleaseFeed {
public:
    AmqpReleaseFeed(const amqp::ConnectionOptions& options, const std::string& queue,
                    std::uint16_t prefetch)
        : connection_(options), channel_(connection_, kChannel) {
        channel_.set_prefetch(prefetch);
        channel_.consume(queue);
    }
    std::optional<amqp::Event> next_event(std::chrono::microseconds timeout) override {
        return connection_.next_event(timeout);
    }
    void ack(std::uint64_t delivery_tag, bool multiple) override {
        channel_.ack(delivery_tag, multiple);
    }

private:
    amqp::Connection connection_;
    amqp::Channel channel_;
};

}  // namespace

std::unique_ptr<ReleaseFeed> open_release_feed(amqp::ConnectionOptions options,
                                               const std::string& queue, std::uint16_t prefetch) {
    options.connection_name = "hourglass audit";
    auto feed = std::make_unique<AmqpReleaseFeed>(options, queue, prefetch);
    spdlog::info("audit: consuming {}", queue);
    return feed;
}

}  // namespace hourglass::audit
