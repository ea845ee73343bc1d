// Where the audit reads released copies from: the audit queue, consumed with manual acks.
// Production consumes it on an amqp::Connection; unit tests of the audit give a fake that
// delivers scripted messages or loses the connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "amqp/connection.hpp"

namespace hourglass::audit {

class ReleaseFeed {
public:
    virtual ~ReleaseFeed() = default;
    // The next delivery (or other event) within `timeout`; throws amqp::Error when the
    // connection is lost.
    virtual std::optional<amqp::Event> next_event(std::chrono::microseconds timeout) = 0;
    // Acks `delivery_tag`, and every earlier delivery too when `multiple`.
    virtual void ack(std::uint64_t delivery_tag, bool multiple) = 0;
};

// Connects (named "hourglass audit"), sets the prefetch and consumes `queue`.
std::unique_ptr<ReleaseFeed> open_release_feed(amqp::ConnectionOptions options,
                                               const std::string& queue, std::uint16_t prefetch);

}  // namespace hourglass::audit
