// Where the loader publishes runs: one AMQP channel in confirm mode. Production opens it on an
// amqp::Connection; unit tests of the loader give a fake that acks, nacks or fails publishes.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "amqp/connection.hpp"
#include "hourglass/message.hpp"

namespace hourglass::loader {

class ReleaseChannel {
public:
    virtual ~ReleaseChannel() = default;
    // Publishes and returns the publish's sequence number (1, 2, ...), which its confirm names.
    virtual std::uint64_t publish(const Message& message) = 0;
    // While held, publishes wait to leave together (amqp::Connection::hold_sends).
    virtual void hold_sends(bool hold) noexcept = 0;
    // The next confirm (or other event) within `timeout`; throws when the connection is lost.
    virtual std::optional<amqp::Event> next_event(std::chrono::microseconds timeout) = 0;
    // The largest frame the broker accepts (a release must fit one, reference §4).
    virtual std::size_t frame_max() const = 0;
};

// Holds a channel's sends (ReleaseChannel::hold_sends), if asked to, until released or gone.
class HeldSends {
  public:
    HeldSends(ReleaseChannel& channel, bool hold) : channel_(hold ? &channel : nullptr) {
        if (channel_) channel_->hold_sends(true);
    }
    ~HeldSends() { release(); }
    HeldSends(const HeldSends&) = delete;
    HeldSends& operator=(const HeldSends&) = delete;
    void release() noexcept {
        if (channel_) channel_->hold_sends(false);
        channel_ = nullptr;
    }

  private:
    ReleaseChannel* channel_;
};

// Connects (named "hourglass loader") and opens a channel with publisher confirms.
std::unique_ptr<ReleaseChannel> open_release_channel(amqp::ConnectionOptions options);

}  // namespace hourglass::loader
