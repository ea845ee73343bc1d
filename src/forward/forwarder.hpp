// The forwarder (reference §3.1 `x-hourglass-exchange`): releases runs to their target exchange.
//
// Runs with a target wait in their own TTL ladder (src/delay/topology.hpp), which dead-letters
// them at their due time into the forward queue, still carrying the target in the header
// x-hourglass-exchange. RabbitMQ cannot remove a header while routing, so hourglass does it
// here: the forwarder consumes the forward queue and publishes each run, without that header
// and otherwise unchanged (routing key, body, properties, x-hourglass-* headers), to its target
// as mandatory with publisher confirms. What the target cannot route (a basic.return: no
// binding and no alternate exchange) and what it refuses (the channel is closed: the exchange
// is gone, or internal) is published to <prefix>.unroutable instead. A copy of the headers goes
// to the audit queue, so targeted jobs end `done` with their lateness like the others; a run
// the loader marked x-hourglass-observed-with is recorded with the last run of its release
// group (reference §6), which left the same forward delay queue after it, so it takes none. The
// forward delivery is acked only once every publish it caused is confirmed: nothing is dropped,
// and a crash in between releases the run again (at least once, reference §6).
#pragma once

#include <optional>
#include <stop_token>
#include <string>

#include "amqp/connection.hpp"
#include "delay/topology.hpp"
#include "common/metrics.hpp"

namespace hourglass::forward {

struct ForwarderOptions {
    amqp::ConnectionOptions amqp;
    delay::TopologyNames names;
    bool audit = true;             // also publish the audit copy (false with --no-audit)
    std::uint16_t prefetch = 500;  // forward deliveries in hand (published, not yet acked)
    std::shared_ptr<metrics::ServiceMetrics> metrics = std::make_shared<metrics::ServiceMetrics>();
};

// A released run as it goes to its target: the target exchange and the message without the
// x-hourglass-exchange and x-hourglass-observed-with headers. Nothing when the target header is
// missing or not a non-empty string (such a message goes to <prefix>.unroutable).
struct TargetedRelease {
    std::string target;
    Message message;  // message.exchange is the target
};
std::optional<TargetedRelease> targeted_release(const Message& forwarded);

// Whether the loader marked the run as observed with the last run of its release group (header
// x-hourglass-observed-with): the audit needs no copy of its release.
bool observed_with_another_run(const Message& forwarded);

// Consumes <prefix>.delay.forward until `stop`, reconnecting with backoff.
void run_forwarder(const ForwarderOptions& options, std::stop_token stop);

}  // namespace hourglass::forward
