#include "delay/topology.hpp"

#include <algorithm>
#include <stdexcept>

#include "amqp/channel.hpp"

namespace hourglass::delay {

TopologyNames::TopologyNames(std::string prefix_)
    : prefix(std::move(prefix_)),
      input(prefix + ".in"),
      output(prefix + ".out"),
      unroutable(prefix + ".unroutable"),
      rejected(prefix + ".rejected"),
      expired(prefix + ".expired"),
      release(prefix + ".delay.released"),
      copy(prefix + ".delay.copy"),
      audit(prefix + ".delay.audit"),
      audit_key(".." + prefix + ".release-copied-to-the-audit.."),
      forward(prefix + ".delay.forward"),
      probe(prefix + ".delay.probe"),
      probe_returned(prefix + ".delay.probe.returned") {}

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

struct DelayQueue {
    std::string name;
    Milliseconds ttl;
    const std::string& dead_letter_exchange;
};

// The delay queues, each behind its own fanout exchange. They are many (244 with the defaults, 305
// with the forward ladder) and each declaration is a metadata commit in the broker, done in the
// process of the channel it arrives on; one declaration at a time took 2.7-4 s at a first start. So
// they are sent without waiting for replies and spread over `channels`, which the broker serves in
// parallel (1.4 s with 8 channels on 2 cores, RabbitMQ 3.10 and 4.3); each channel is then awaited.
void declare_delay_queues(amqp::Channel& channel, QueueType queue_type,
                          const std::vector<DelayQueue>& queues) {
    using amqp::Reply;
    // Beside `channel`, closed again when declared.
    std::vector<amqp::Channel> ladder_channels;
    for (std::uint16_t i = 1; i <= kLadderChannels; ++i) {
        ladder_channels.emplace_back(channel.connection(),
                                     static_cast<std::uint16_t>(channel.number() + i));
    }
    for (std::size_t i = 0; i < queues.size(); ++i) {
        const auto& queue = queues[i];
        auto& ladder_channel = ladder_channels[i % ladder_channels.size()];
        auto arguments = queue_arguments(queue_type);
        arguments.emplace_back("x-message-ttl", static_cast<std::int64_t>(queue.ttl.count()));
        arguments.emplace_back("x-dead-letter-exchange", queue.dead_letter_exchange);
        if (queue_type == QueueType::quorum) {
            // Quorum queues dead-letter at most once unless asked; at-least-once needs
            // reject-publish overflow (RabbitMQ 3.10+).
            arguments.emplace_back("x-dead-letter-strategy", std::string("at-least-once"));
            arguments.emplace_back("x-overflow", std::string("reject-publish"));
        }
        // In this order on one channel: the broker handles a channel's methods in order.
        ladder_channel.declare_exchange(queue.name, "fanout", {}, Reply::none);
        ladder_channel.declare_queue_no_wait(queue.name, arguments);
        ladder_channel.bind_queue(queue.name, queue.name, "", {}, Reply::none);
    }
    amqp::await_channels(ladder_channels, "declaring the delay queues");
}

// Targeted runs: their own ladder, released to the forward queue (see the header).
void add_forward_ladder(std::vector<DelayQueue>& queues, const TopologyNames& names,
                        const DelayLadder& ladder) {
    for (const auto ttl : ladder.ttls())
        queues.push_back({names.forward_delay(ttl), ttl, names.forward});
}

}  // namespace

void declare_topology(amqp::Channel& channel, const TopologyOptions& options,
                      const DelayLadder& ladder) {
    const auto& names = options.names;
    const auto plain_queue = queue_arguments(options.queue_type);

    channel.declare_exchange(names.input, "topic");
    channel.declare_queue(names.input, plain_queue);
    channel.bind_queue(names.input, names.input, "#");

    channel.declare_exchange(names.unroutable, "fanout");
    channel.declare_queue(names.unroutable, plain_queue);
    channel.bind_queue(names.unroutable, names.unroutable, "");

    channel.declare_exchange(names.output, "topic",
                                {{"alternate-exchange", names.unroutable}});

    channel.declare_exchange(names.rejected, "fanout");
    channel.declare_queue(names.rejected, plain_queue);
    channel.bind_queue(names.rejected, names.rejected, "");

    channel.declare_exchange(names.expired, "fanout");
    channel.declare_queue(names.expired, plain_queue);
    channel.bind_queue(names.expired, names.expired, "");

    // release -> output, and -> copy -> (audit_key) audit queue: see the header.
    channel.declare_exchange(names.release, "fanout");
    channel.bind_exchange(names.output, names.release, "");
    if (options.audit) {
        channel.declare_exchange(names.copy, "direct");
        channel.bind_exchange(names.copy, names.release, "");
        channel.declare_queue(names.audit, plain_queue);
        channel.bind_queue(names.audit, names.copy, names.audit_key);
        auto probe_returned = plain_queue;
        probe_returned.emplace_back("x-message-ttl", static_cast<std::int64_t>(kProbeReturnedTtl.count()));
        channel.declare_queue(names.probe_returned, probe_returned);
        channel.bind_queue(names.probe_returned, names.copy, names.probe_returned);
    }

    check_delay_lanes(options.delay_lanes, "topology");
    std::vector<DelayQueue> delay_queues;
    for (const auto ttl : ladder.ttls()) {
        for (unsigned lane = 0; lane < options.delay_lanes; ++lane) {
            delay_queues.push_back({names.delay(ttl, lane), ttl, names.release});
        }
    }
    // The forwarder consumes the forward queue whether or not this instance accepts targets.
    channel.declare_exchange(names.forward, "fanout");
    channel.declare_queue(names.forward, plain_queue);
    channel.bind_queue(names.forward, names.forward, "");
    if (options.forward_ladder) add_forward_ladder(delay_queues, names, ladder);
    // Published with the key `probe_returned`, dead-lettered with it into the copy exchange.
    if (options.audit) delay_queues.push_back({names.probe, kProbeTtl, names.copy});
    declare_delay_queues(channel, options.queue_type, delay_queues);
}

void declare_forward_ladder(amqp::Channel& channel, const TopologyOptions& options,
                            const DelayLadder& ladder) {
    std::vector<DelayQueue> queues;
    add_forward_ladder(queues, options.names, ladder);
    declare_delay_queues(channel, options.queue_type, queues);
}

}  // namespace hourglass::delay
