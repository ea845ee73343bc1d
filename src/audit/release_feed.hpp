// Where the audit reads released copies from: the audit queue, consumed with manual acks; and
// where it sends the release probe (delay/topology.hpp) and reads it back.
// Production consumes it on an amqp::Connection; unit tests of the audit give a fake that
// delivers scripted messages or loses the connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "amqp/connection.hpp"
#include "delay/topology.hpp"
#include "hourglass/time.hpp"

namespace hourglass::audit {

class ReleaseFeed {
public:
    virtual ~ReleaseFeed() = default;
    // The next delivery (or other event) within `timeout`; throws amqp::Error when the
    // connection is lost.
    virtual std::optional<amqp::Event> next_event(std::chrono::microseconds timeout) = 0;
    // Acks `delivery_tag`, and every earlier delivery too when `multiple`.
    virtual void ack(std::uint64_t delivery_tag, bool multiple) = 0;
    // Publishes a release probe stamped `sent_at`; throws amqp::Error when the connection is
    // lost. Never waits for the broker: a blocked publisher leaves the probe in its socket.
    virtual void send_probe(TimePoint sent_at) = 0;
};

// Connects (named "hourglass audit"), sets the prefetch and consumes the audit queue of
// `names` and the queue probes come back to. Probes go out on a second connection
// ("hourglass probe"), so that a broker that blocks publishers (and then reads nothing from
// their connection, acks included) never stops the audit's consuming.
std::unique_ptr<ReleaseFeed> open_release_feed(amqp::ConnectionOptions options,
                                               const delay::TopologyNames& names,
                                               std::uint16_t prefetch);

}  // namespace hourglass::audit
