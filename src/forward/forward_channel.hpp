// Where the forwarder takes released runs from and publishes them: one AMQP connection with a
// consumer on <prefix>.delay.forward and a second channel in confirm mode. Unit tests of the
// forward session give a fake that delivers scripted runs, confirms, refuses, returns, or
// closes the publish channel.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "amqp/connection.hpp"
#include "hourglass/message.hpp"

namespace hourglass::forward {

class ForwardChannel {
public:
    virtual ~ForwardChannel() = default;
    // The next forward delivery, or confirm or return of a publish, within `timeout`. Throws
    // amqp::ChannelError naming publish_channel() when the broker closed the publish channel
    // (a target exchange is gone or refuses publishes), amqp::Error when the connection is lost.
    virtual std::optional<amqp::Event> next_event(std::chrono::microseconds timeout) = 0;
    // Publishes with a confirm (mandatory: the broker returns what it cannot route); returns
    // the publish's sequence number, from 1 again after each reopen_publishing().
    virtual std::uint64_t publish(const Message& message, bool mandatory) = 0;
    // Acks the one forward delivery `delivery_tag`.
    virtual void ack(std::uint64_t delivery_tag) = 0;
    // The publish channel's number, as amqp::ChannelError::channel() names it.
    virtual std::uint16_t publish_channel() const = 0;
    // Opens the publish channel again, in confirm mode, after the broker closed it.
    virtual void reopen_publishing() = 0;
};

// Connects (named "hourglass forward"), sets the prefetch and consumes `queue` on one channel,
// and opens a second one with publisher confirms.
std::unique_ptr<ForwardChannel> open_forward_channel(amqp::ConnectionOptions options,
                                                     const std::string& queue,
                                                     std::uint16_t prefetch);

}  // namespace hourglass::forward
