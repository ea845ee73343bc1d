// The audit (reference §6.4): consumes the copy of every release from the audit queue, which the
// delay queues dead-letter into next to the output exchange, and records `released_at`,
// `lateness_ms` and state `done` in batches. A batch is acked only after its update commits.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>

#include "amqp/connection.hpp"
#include "audit/release_feed.hpp"
#include "delay/topology.hpp"
#include "common/database_clock.hpp"
#include "common/health.hpp"
#include "common/metrics.hpp"
#include "store/store_options.hpp"
#include "store/release_store.hpp"

namespace hourglass::audit {

struct AuditOptions {
    amqp::ConnectionOptions amqp;
    store::StoreOptions store;
    delay::TopologyNames names;
    // Also the most copies one batch of a burst holds (below).
    std::uint16_t prefetch = 10000;
    std::size_t batch_size = 500;
    // A record costs PostgreSQL a transaction of five statements whatever its size (eight
    // before they were folded): at 1,000 runs/s a batch every 20 ms cost it 8 s more CPU per
    // 60,000 runs than one every 100 ms, CPU the broker needed to release on time
    // (bench/journal/2026-11-22-to-12-04.md). `done` shows that much later; `released_at` is each copy's
    // arrival all the same.
    Milliseconds batch_wait{100};
    // A burst: the last batch recorded at least `burst_runs_per_second` runs per second of the
    // span of their due times (at least `batch_wait`; its copies' release groups included), so
    // copies of a steady load that queued up behind a slow record are none. The next batch
    // then waits until copies stop coming for `burst_quiet`, or `burst_hold` after its first,
    // or `prefetch` copies, so that PostgreSQL records a hotspot after the broker has released
    // it, not on the cores the broker needs meanwhile. `released_at` is each copy's arrival
    // all the same. 0: never.
    std::size_t burst_runs_per_second = 5000;
    // The consumers' queues are still delivering a burst when its last copy reaches the
    // audit (2.5 s behind it for 100,000 runs on RabbitMQ 3.10): 2 s of quiet lets them finish.
    Milliseconds burst_quiet{2000};
    Milliseconds burst_hold{10000};
    // Classic delay queues dead-letter at most once: leave releases around a broker outage to
    // the loader's re-send (see released_while_the_broker_went_down). Off for quorum queues.
    bool doubt_releases_around_outages = true;
    std::shared_ptr<metrics::ServiceMetrics> metrics = std::make_shared<metrics::ServiceMetrics>();
    // Where the audit says how far behind the releases it is (ServiceHealth::audit_behind).
    std::shared_ptr<health::ServiceHealth> health = std::make_shared<health::ServiceHealth>(metrics);
    // The one clock (reference §6), shared with the service's other components.
    std::shared_ptr<DatabaseClock> clock = std::make_shared<DatabaseClock>();
};

// Reads id, run and due from a released message's headers; nothing if they are missing.
std::optional<ObservedRelease> observed_release(const Message& message,
                                                std::chrono::sys_time<std::chrono::microseconds>
                                                    received_at);

// How long before the audit lost the broker a dead-lettering counts as made while it went
// down: the broker closes connections before it stops queues; x-death times are whole seconds.
inline constexpr Milliseconds kOutageMargin{1000};

// A time the audit lost the broker while consuming, and when it consumed again.
struct BrokerOutage {
    TimePoint lost_at;
    std::optional<TimePoint> back_at;  // unset: not back yet
};

// When the broker dead-lettered a released message: the `time` of its newest x-death entry
// (whole seconds); nothing if it has none.
std::optional<TimePoint> dead_lettered_at(const Message& message);

// Whether a release may have reached the audit queue but not the consumers' queues: a broker
// shutting down dead-letters each expired message once, into the queues still running, so the
// audit's copy alone does not prove yours. True for messages dead-lettered from kOutageMargin
// (and one second of x-death rounding) before an outage until the audit consumed again; those
// are not recorded, stay `enqueued` and are published again after --resend-after (at least
// once). The copy of that re-send is dead-lettered later and recorded.
bool released_while_the_broker_went_down(std::optional<TimePoint> dead_lettered,
                                         const std::deque<BrokerOutage>& outages) noexcept;

// What the audit reaches outside itself. Every member left empty means the real thing
// (store::JobStore, the audit queue on an AMQP connection, the process's one clock); unit tests
// inject fakes.
struct AuditSeams {
    std::function<std::unique_ptr<store::ReleaseStore>(const store::StoreOptions&)> open_store;
    std::function<std::unique_ptr<ReleaseFeed>(const AuditOptions&)> open_feed;
    // Release times and outage times are read on it (corrected to PostgreSQL's, reference §6).
    std::function<std::chrono::sys_time<std::chrono::microseconds>()> now;
};

// Consumes the audit queue until `stop`, reconnecting with backoff; records releases in
// batches of `batch_size`, or `batch_wait` after the first (in a burst, as AuditOptions says),
// and acks each batch once recorded.
void run_audit(const AuditOptions& options, std::stop_token stop, AuditSeams seams = {});

}  // namespace hourglass::audit
