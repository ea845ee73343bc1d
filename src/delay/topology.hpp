// The broker topology of reference §2 and the delay queues of reference §6.3.
//
// Delay design: a fixed ladder of TTL queues, ttl = 0, step, 2*step, ..., >= horizon (at most
// 64 queues whatever the load). Each delay queue has its own fanout exchange, so a job is
// published with its own routing key (kept through dead-lettering) and no routing header.
// The loader publishes a run at exactly `due - ttl` into the largest ttl that fits, so every
// message makes one hop and the broker releases it at its due time even if hourglass dies
// after publishing. All delay queues dead-letter into the release exchange (fanout), which
// passes every release to the output exchange and to the copy exchange (direct), and the copy
// exchange queues to the audit only the releases carrying the audit key; the audit copy is
// therefore not a binding of the output exchange, whose alternate exchange still fires.
// Fanout and direct exchanges route by a hash lookup: a topic exchange in this place (bound on
// `#` and on the audit key) cost the broker about 10 us more per release on RabbitMQ 3.10,
// a fifth of a 100,000 hotspot's drain (bench/journal/2026-11-22-to-12-04.md).
//
// Release groups: runs the loader publishes together into one delay queue with one due time
// leave it in publish order (one TTL, first in first out), so the release of the group's last
// run shows that all of them left. The loader gives the last run of each group, and every run
// observed alone, a BCC routing key (`audit_key`); RabbitMQ strips the BCC header at publish
// but keeps the key for routing, also when it dead-letters. The copy exchange's binding on that
// key queues one audit copy per group instead of one per run.
// A release without the key is not observed; --no-audit publishes none. Targeted runs form
// groups in their forward delay queue the same way, and carry no key: the forwarder copies the
// last run of each group (src/forward/forwarder.hpp).
//
// Earlier ladders keep their route after an upgrade, since a queue's dead-letter exchange
// cannot change in place. The first ladder, `<prefix>.delay.<ttl>`, dead-lettered into a
// fanout exchange that sent every release on through two more exchanges (observe, then skip
// or audit); the second (2026-11-27), `<prefix>.delay.<ttl>ms`, into a topic exchange,
// `<prefix>.delay.dispatch`, bound on `#` to the output and on the audit key to the audit
// queue. Both routes end in the same output exchange and audit queue, and their queues empty
// within a horizon of an upgrade; hence a new name for each new route's ladder.
//
// Lanes: each rung of the untargeted ladder is `lanes` queues with the same TTL, and the loader
// spreads consecutive publishes over them. A queue expires and dead-letters its messages in one
// broker process, so a hotspot held by one queue is released at one process's rate; held by
// several, the broker releases it on all its cores. Lane 0 keeps the name of a ladder without
// lanes, so a deployment that adds lanes keeps its queues.
//
// Runs with a target exchange (x-hourglass-exchange, reference §3.1) take a second ladder with the
// same TTLs (one lane: the forwarder consumes them through one queue anyway), which
// dead-letters into the forward fanout exchange and its queue instead; the forwarder
// (src/forward/) publishes each to its target. The number of queues stays fixed whatever the
// load: the ladder times (lanes + 1), plus the forward queue. The forward ladder is declared at
// start only by an instance that accepts targets (--allow-exchange); any other declares it when
// it first claims a targeted run (stored while it accepted them, or by another instance), so a
// deployment that never uses targets has no queue for them but the forward queue.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/time.hpp"

namespace hourglass::amqp {
class Channel;
}

namespace hourglass::delay {

enum class QueueType { classic, quorum };

// Queues per rung of the untargeted ladder (--delay-lanes).
inline constexpr unsigned kDefaultDelayLanes = 4;
inline constexpr unsigned kMaxDelayLanes = 16;

// Throws std::invalid_argument unless 1 <= lanes <= kMaxDelayLanes; `who` starts the message.
void check_delay_lanes(unsigned lanes, std::string_view who);

struct TopologyNames {
    explicit TopologyNames(std::string prefix = "hourglass");
    std::string prefix;
    std::string input;       // exchange and queue hourglass.in
    std::string output;      // exchange hourglass.out
    std::string unroutable;  // exchange and queue hourglass.unroutable
    std::string rejected;    // exchange and queue hourglass.rejected
    std::string expired;     // exchange and queue hourglass.expired (x-hourglass-expires-after)
    std::string release;     // fanout exchange the delay queues dead-letter into
    std::string copy;        // direct exchange: releases with the audit key to the audit queue
    std::string audit;       // queue of the release copies observed
    // BCC routing key of a run whose release the audit observes (the last of a release group,
    // or a run observed alone). Dots at both ends keep user bindings such as `*.*` or
    // `orders.#` from matching it on the output exchange, where the release carries it as a
    // second routing key.
    std::string audit_key;
    std::string forward;     // fanout exchange and queue of released runs with a target exchange
    // Exchange and queue of the release probe (below): a delay queue of kProbeTtl that
    // dead-letters into the copy exchange, whose binding on `probe_returned` queues it to the
    // queue of that name (the audit consumes it): a probe reaches no consumer's queue.
    std::string probe;
    std::string probe_returned;
    // Exchange and queue of one TTL (in milliseconds) and lane: <prefix>.delay.ttl-<ttl>ms,
    // then <prefix>.delay.ttl-<ttl>ms.<lane>.
    std::string delay(Milliseconds ttl, unsigned lane = 0) const;
    // Exchange and queue of one TTL for runs with a target exchange.
    std::string forward_delay(Milliseconds ttl) const;
};

// Which TTL queue a run goes to, and when it must be published.
class DelayLadder {
public:
    // step: distance between TTLs; the ladder reaches at least `horizon`.
    DelayLadder(Milliseconds horizon, Milliseconds step);
    // The ladder for a horizon: at most 64 queues, step a whole number of seconds.
    static DelayLadder for_horizon(Milliseconds horizon);

    const std::vector<Milliseconds>& ttls() const noexcept { return ttls_; }
    // The longest a claimed run waits in memory before it is published.
    Milliseconds step() const noexcept { return step_; }
    // When to publish a run due at `due` that is in hand at `now`: due minus the largest TTL
    // not longer than due - now, so that it waits in the broker as long as possible.
    TimePoint publish_at(TimePoint due, TimePoint now) const noexcept;
    // The TTL to publish with at `now`: the smallest TTL not shorter than due - now (0 once
    // due has passed), so a release is never early. Publishing on time at publish_at(due, ..)
    // gives exactly due - now; publishing late makes the release late by as much, never early.
    Milliseconds ttl_for(TimePoint due, TimePoint now) const noexcept;

private:
    std::vector<Milliseconds> ttls_;
    Milliseconds step_;
};

struct TopologyOptions {
    TopologyNames names;
    QueueType queue_type = QueueType::classic;
    bool audit = true;
    unsigned delay_lanes = kDefaultDelayLanes;  // 1 .. kMaxDelayLanes
    // Whether declare_topology declares the forward ladder (declare_forward_ladder) too.
    bool forward_ladder = true;
};

// The release probe: the audit publishes a probe into <prefix>.delay.probe every second, and
// the broker releases it kProbeTtl later into <prefix>.delay.probe.returned, as it releases runs,
// where the audit consumes it. Probes left there when no audit runs expire after
// kProbeReturnedTtl. While
// probes come back, the broker releases and the audit observes; while none does (a memory or
// disk alarm blocks publishers, the broker or the audit is stalled), a run whose release was
// not observed is not taken for lost (loader: resend_due_before).
inline constexpr Milliseconds kProbeTtl{1000};
inline constexpr Milliseconds kProbeReturnedTtl{60000};

// Channels declare_topology opens beside its own for the delay queues (channel + 1 ..
// channel + kLadderChannels), and closes again.
inline constexpr std::uint16_t kLadderChannels = 8;

// Declares everything idempotently on an open channel. Every queue gets an explicit
// x-queue-type (reference §10).
void declare_topology(amqp::Channel& channel, const TopologyOptions& options,
                      const DelayLadder& ladder);

// Declares the forward ladder (the delay queues of runs with a target exchange) idempotently,
// on channels channel + 1 .. channel + kLadderChannels like declare_topology.
void declare_forward_ladder(amqp::Channel& channel, const TopologyOptions& options,
                            const DelayLadder& ladder);

}  // namespace hourglass::delay
