#include "audit/release_feed.hpp"

#include <spdlog/spdlog.h>

namespace hourglass::audit {

namespace {

constexpr std::uint16_t kChannel = 1;

class AmqpReleaseFeed final : public ReleaseFeed {
public:
    AmqpReleaseFeed(const amqp::ConnectionOptions& options, const std::string& queue,
                    std::uint16_t prefetch)
        : connection_(options) {
        connection_.open_channel(kChannel);
        connection_.set_prefetch(kChannel, prefetch);
        connection_.consume(kChannel, queue);
    }
    std::optional<amqp::Event> next_event(std::chrono::microseconds timeout) override {
        return connection_.next_event(timeout);
    }
    void ack(std::uint64_t delivery_tag, bool multiple) override {
        connection_.ack(kChannel, delivery_tag, multiple);
    }

private:
    amqp::Connection connection_;
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
