// Where ingest takes commands from and publishes receipts and rejected copies: an AMQP
// connection with a consumer on <prefix>.in and a second channel in confirm mode. Unit tests of
// the ingest session give a fake that delivers scripted commands and confirms or refuses.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "amqp/connection.hpp"
#include "hourglass/message.hpp"

namespace hourglass::ingest {

class CommandChannel {
public:
    virtual ~CommandChannel() = default;
    // The next command delivered or confirm of a publish within `timeout`; throws amqp::Error
    // when the connection is lost.
    virtual std::optional<amqp::Event> next_event(std::chrono::microseconds timeout) = 0;
    // Publishes with a confirm; returns the publish's sequence number (1, 2, ...).
    virtual std::uint64_t publish(const Message& message) = 0;
    // Acks every command delivered up to `delivery_tag`.
    virtual void ack_through(std::uint64_t delivery_tag) = 0;
    // Acks the one command delivered with `delivery_tag`.
    virtual void ack(std::uint64_t delivery_tag) = 0;
    // The largest frame the broker accepts (what ingest publishes must fit one, reference §4).
    virtual std::size_t frame_max() const = 0;
};

// Connects (named "hourglass ingest"), sets the prefetch and consumes `queue` on one channel,
// and opens a second one with publisher confirms.
std::unique_ptr<CommandChannel> open_command_channel(amqp::ConnectionOptions options,
                                                     const std::string& queue,
                                                     std::uint16_t prefetch);

}  // namespace hourglass::ingest
