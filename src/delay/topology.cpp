#include "delay/topology.hpp"

#include <algorithm>
#include <stdexcept>

#include "amqp/connection.hpp"

namespace hourglass::delay {

TopologyNames::TopologyNames(std::string prefix_)
    : prefix(std::move(prefix_)),
      input(prefix + ".in"),
      output(prefix + ".out"),
      unroutable(prefix + ".unroutable"),
      rejected(prefix + ".rejected"),
      release(prefix + ".delay.released"),
      copy(prefix + ".delay.copy"),
      audit(prefix + ".delay.audit"),
      audit_key(".." + prefix + ".release-copied-to-the-audit.."),
      forward(prefix + ".delay.forward") {}

void check_delay_lanes(unsigned lanes, std::string_view who) {
    if (lanes < 1 || lanes > kMaxDelayLanes) {
        throw std::invalid_argument(std::string(who) + ": delay lanes must be 1.." +
                                    std::to_string(kMaxDelayLanes) + ", not " +
                                    std::to_string(lanes));
    }
}

std::string TopologyNames::delay(Milliseconds ttl, unsigned lane) const {
    auto name = prefix + ".delay.ttl-" + std::to_string(ttl.count()) + "ms";
    if (lane > 0) name += "." + std::to_string(lane);
    return name;
}

std::string TopologyNames::forward_delay(Milliseconds ttl) const {
    return forward + "." + std::to_string(ttl.count());
}

DelayLadder::DelayLadder(Milliseconds horizon, Milliseconds step) : step_(step) {
    for (Milliseconds ttl{0}; ttl < horizon + step; ttl += step) ttls_.push_back(ttl);
}

DelayLadder DelayLadder::for_horizon(Milliseconds horizon) {
    constexpr long kMaxQueues = 64;
    const long seconds = std::max<long>(1, (horizon.count() + 999) / 1000);
    // The shortest whole-second step with which ttl 0 .. >= horizon fits in 64 queues: 1 s up
    // to a 62 s horizon (61 rungs for the default 60 s). A run then waits at most 1 s in memory
    // before its publish, and since every run of a burst due at one instant waits for the same
    // rung, the loader hands a burst over at up to `--max-in-memory-runs` a second (twice what
    // the 2 s step used until 2026-11-26 allowed; docs/architecture.md).
    const long step_seconds = std::max<long>(1, (seconds + kMaxQueues - 3) / (kMaxQueues - 2));
    return DelayLadder(horizon, std::chrono::seconds{step_seconds});
}

TimePoint DelayLadder::publish_at(TimePoint due, TimePoint now) const noexcept {
    const auto remaining = due - now;
    if (remaining <= Milliseconds{0}) return due;
    const auto index =
        std::min<std::size_t>(static_cast<std::size_t>(remaining / step_), ttls_.size() - 1);
    return due - ttls_[index];
}

Milliseconds DelayLadder::ttl_for(TimePoint due, TimePoint now) const noexcept {
    const auto remaining = due - now;
    if (remaining <= Milliseconds{0}) return Milliseconds{0};
    // Rounded up: a TTL shorter than the time left would release the run early.
    const auto index = std::min<std::size_t>(
        static_cast<std::size_t>((remaining + step_ - Milliseconds{1}) / step_), ttls_.size() - 1);
    return ttls_[index];
}

namespace {

amqp::Arguments queue_arguments(QueueType type) {
    amqp::Arguments arguments;
    arguments.emplace_back("x-queue-type",
                           std::string(type == QueueType::quorum ? "quorum" : "classic"));
    return arguments;
}

// `lanes` TTL queues per rung, each behind its own fanout exchange, dead-lettering into
// `dead_letter_exchange`.
template <typename NameOf>
void declare_ladder(amqp::Connection& connection, std::uint16_t channel, QueueType queue_type,
                    const DelayLadder& ladder, unsigned lanes, NameOf name_of,
                    const std::string& dead_letter_exchange) {
    for (const auto ttl : ladder.ttls()) {
        for (unsigned lane = 0; lane < lanes; ++lane) {
            const auto name = name_of(ttl, lane);
            auto arguments = queue_arguments(queue_type);
            arguments.emplace_back("x-message-ttl", static_cast<std::int64_t>(ttl.count()));
            arguments.emplace_back("x-dead-letter-exchange", dead_letter_exchange);
            if (queue_type == QueueType::quorum) {
                // Quorum queues dead-letter at most once unless asked; at-least-once needs
                // reject-publish overflow (RabbitMQ 3.10+).
                arguments.emplace_back("x-dead-letter-strategy", std::string("at-least-once"));
                arguments.emplace_back("x-overflow", std::string("reject-publish"));
            }
            connection.declare_exchange(channel, name, "fanout");
            connection.declare_queue(channel, name, arguments);
            connection.bind_queue(channel, name, name, "");
        }
    }
}

}  // namespace

void declare_topology(amqp::Connection& connection, std::uint16_t channel,
                      const TopologyOptions& options, const DelayLadder& ladder) {
    const auto& names = options.names;
    const auto plain_queue = queue_arguments(options.queue_type);

    connection.declare_exchange(channel, names.input, "topic");
    connection.declare_queue(channel, names.input, plain_queue);
    connection.bind_queue(channel, names.input, names.input, "#");

    connection.declare_exchange(channel, names.unroutable, "fanout");
    connection.declare_queue(channel, names.unroutable, plain_queue);
    connection.bind_queue(channel, names.unroutable, names.unroutable, "");

    connection.declare_exchange(channel, names.output, "topic",
                                {{"alternate-exchange", names.unroutable}});

    connection.declare_exchange(channel, names.rejected, "fanout");
    connection.declare_queue(channel, names.rejected, plain_queue);
    connection.bind_queue(channel, names.rejected, names.rejected, "");

    // release -> output, and -> copy -> (audit_key) audit queue: see the header.
    connection.declare_exchange(channel, names.release, "fanout");
    connection.bind_exchange(channel, names.output, names.release, "");
    if (options.audit) {
        connection.declare_exchange(channel, names.copy, "direct");
        connection.bind_exchange(channel, names.copy, names.release, "");
        connection.declare_queue(channel, names.audit, plain_queue);
        connection.bind_queue(channel, names.audit, names.copy, names.audit_key);
    }

    check_delay_lanes(options.delay_lanes, "topology");
    declare_ladder(
        connection, channel, options.queue_type, ladder, options.delay_lanes,
        [&](Milliseconds ttl, unsigned lane) { return names.delay(ttl, lane); }, names.release);

    // Targeted runs: their own ladder, released to the forward queue (see the header).
    connection.declare_exchange(channel, names.forward, "fanout");
    connection.declare_queue(channel, names.forward, plain_queue);
    connection.bind_queue(channel, names.forward, names.forward, "");
    declare_ladder(
        connection, channel, options.queue_type, ladder, 1,
        [&](Milliseconds ttl, unsigned) { return names.forward_delay(ttl); }, names.forward);
}

}  // namespace hourglass::delay
