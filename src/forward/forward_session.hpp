// One connection's worth of forwarding (forwarder.hpp): takes each forward delivery, publishes
// the run to its target (mandatory, confirmed) and a copy of its headers to the audit queue,
// sends what the target cannot route or refuses to <prefix>.unroutable, and acks the delivery
// only once every publish it caused is confirmed. Reads and writes through a ForwardChannel, so
// that unit tests can script the broker.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <stop_token>
#include <string>

#include "amqp/confirm_tracker.hpp"
#include "common/log_budget.hpp"
#include "forward/forward_channel.hpp"
#include "forward/forwarder.hpp"
#include "forward/forwarder_metrics.hpp"

namespace hourglass::forward {

class ForwardSession {
public:
    // `options`, `metrics` and `channel` outlive the session.
    ForwardSession(const ForwarderOptions& options, ForwarderMetrics& metrics, ForwardChannel& channel);

    // Forwards until `stop`, then finishes what is in hand (up to kShutdownConfirmWait);
    // deliveries not taken are requeued by the broker when the connection closes. Throws
    // amqp::Error when the connection is lost or the broker keeps refusing publishes.
    void run(std::stop_token stop);

    // One step of run(): handles the next event within `wait` (a delivery is taken only while
    // `stop` is not requested), then lets the next suspect target go if none is being probed.
    void poll(std::stop_token stop, std::chrono::microseconds wait);

    // Forward deliveries taken and not yet acked.
    std::size_t in_hand() const noexcept { return in_hand_.size(); }

    static constexpr auto kShutdownConfirmWait = std::chrono::seconds{5};
    // The publish channel closed, or the broker refused one of hourglass's own publishes, this
    // often with no successful confirm in between: something other than one bad target is
    // wrong (say <prefix>.unroutable was deleted or is full), so reconnect with backoff.
    static constexpr int kMaxFailuresInARow = 10;

private:
    // Where one publish of a forwarded run goes.
    enum class Destination { target, unroutable, audit };

    // One forward delivery, held until every publish it caused is confirmed.
    struct InHand {
        Message release;              // as published to the target (exchange = target)
        std::string problem;          // why it is not forwarded to its target, if so
        int unconfirmed = 0;          // publishes not yet confirmed
        bool awaiting_probe = false;  // its target publish waits in the suspects queue
    };

    // One unconfirmed publish: the forward delivery it belongs to, and where it went.
    struct Publish {
        std::uint64_t tag = 0;
        Destination destination = Destination::target;
    };

    void handle(amqp::Event&& event, std::stop_token stop);
    void take(amqp::Delivery&& delivery);
    std::uint64_t publish(std::uint64_t tag, Destination destination);
    void send_to_unroutable(std::uint64_t tag);
    void publish_next_suspect();
    void settle(const amqp::Confirm& confirm);
    void on_returned(const amqp::Returned& returned);
    void recover(const amqp::ChannelError& error);

    const ForwarderOptions& options_;
    ForwarderMetrics& metrics_;
    ForwardChannel& channel_;
    std::map<std::uint64_t, InHand> in_hand_;  // by delivery tag on the forward queue
    amqp::ConfirmTracker<Publish> unconfirmed_;
    std::deque<std::uint64_t> suspects_;  // delivery tags whose target publish is to be probed
    std::optional<std::uint64_t> probe_;  // sequence of the one suspect publish in flight
    int failures_in_a_row_ = 0;
    LogBudget unroutable_lines_;  // jobs decide how many go there; the metrics count each
};

}  // namespace hourglass::forward
