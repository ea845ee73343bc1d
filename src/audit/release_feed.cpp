#include "audit/release_feed.hpp"

#include <spdlog/spdlog.h>

#include "amqp/channel.hpp"
#include "hourglass/command.hpp"

namespace hourglass::audit {

namespace {

constexpr std::uint16_t kChannel = 1;

amqp::ConnectionOptions named(amqp::ConnectionOptions options, std::string name) {
    options.connection_name = std::move(name);
    return options;
}

class AmqpReleaseFeed final : public ReleaseFeed {
public:
    AmqpReleaseFeed(const amqp::ConnectionOptions& options, const delay::TopologyNames& names,
                    std::uint16_t prefetch)
        : connection_(named(options, "hourglass audit")),
          channel_(connection_, kChannel),
          probe_connection_(named(options, "hourglass probe")),
          probe_channel_(probe_connection_, kChannel),
          probe_exchange_(names.probe),
          probe_key_(names.probe_returned) {
        channel_.set_prefetch(prefetch);
        channel_.consume(names.audit);
        channel_.consume(names.probe_returned);
    }
    std::optional<amqp::Event> next_event(std::chrono::microseconds timeout) override {
        return connection_.next_event(timeout);
    }
    void ack(std::uint64_t delivery_tag, bool multiple) override {
        channel_.ack(delivery_tag, multiple);
    }
    void send_probe(TimePoint sent_at) override {
        Message probe;
        probe.exchange = probe_exchange_;
        probe.routing_key = probe_key_;
        set_header(probe.properties, std::string(header::kProbe),
                   static_cast<std::int64_t>(sent_at.time_since_epoch().count()));
        probe_channel_.publish(probe);
        // Nothing is consumed here: read what came (heartbeats, a close) so it is handled.
        while (probe_connection_.next_event(std::chrono::microseconds{0})) {
        }
    }

private:
    amqp::Connection connection_;
    amqp::Channel channel_;
    amqp::Connection probe_connection_;
    amqp::Channel probe_channel_;
    std::string probe_exchange_;
    std::string probe_key_;  // the queue probes come back to
};

}  // namespace

std::unique_ptr<ReleaseFeed> open_release_feed(amqp::ConnectionOptions options,
                                               const delay::TopologyNames& names,
                                               std::uint16_t prefetch) {
    auto feed = std::make_unique<AmqpReleaseFeed>(options, names, prefetch);
    spdlog::info("audit: consuming {}, and {} to see the broker release", names.audit,
                 names.probe_returned);
    return feed;
}

}  // namespace hourglass::audit
