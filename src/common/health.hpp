// What the service knows of its own state (reference §9): whether the migrations it embeds are
// applied, whether the broker topology is declared, and which components hold open
// connections to RabbitMQ and PostgreSQL. Components report to it and read it (the loader
// re-sends lost runs only while the audit is connected); GET /readyz is its
// readiness_problem(). Each fact is also a gauge of the service's metrics
// (hourglass_migrations_current, hourglass_topology_declared, hourglass_connected), so /readyz
// and /metrics never disagree.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/metrics.hpp"
#include "hourglass/time.hpp"

namespace hourglass::health {

// The components whose connections are tracked, and their peers.
enum class Component { ingest, loader, audit, forward };
enum class Peer { rabbitmq, postgresql };
inline constexpr std::array kComponents = {Component::ingest, Component::loader, Component::audit,
                                           Component::forward};
inline constexpr std::array kPeers = {Peer::rabbitmq, Peer::postgresql};
// Whether a component connects to a peer at all (the forwarder needs no database): only those
// pairs have a hourglass_connected series and count for readiness.
constexpr bool connects(Component component, Peer peer) noexcept {
    return !(component == Component::forward && peer == Peer::postgresql);
}
std::string_view to_string(Component component) noexcept;
std::string_view to_string(Peer peer) noexcept;

// Probes come back every second; this long without one is a broker that does not release (a
// memory or disk alarm blocks publishers; a stalled queue) or an audit that does not read.
inline constexpr Milliseconds kProbeSilence{5000};

class ServiceHealth {
public:
    // Shows every fact as a gauge of `metrics`, which it keeps alive.
    explicit ServiceHealth(std::shared_ptr<metrics::ServiceMetrics> metrics);
    ServiceHealth(const ServiceHealth&) = delete;
    ServiceHealth& operator=(const ServiceHealth&) = delete;

    void set_migrations_current(bool current) noexcept { migrations_current_.set(current ? 1 : 0); }
    void set_topology_declared(bool declared) noexcept { topology_declared_.set(declared ? 1 : 0); }
    bool migrations_current() const noexcept { return migrations_current_.value() >= 1; }
    bool topology_declared() const noexcept { return topology_declared_.value() >= 1; }

    // How far behind the releases the audit is: of the latest batch it recorded, the least
    // time from a run's due time to its copy's arrival. A run is taken for lost only once its
    // release had that much longer to be recorded (loader: resend_due_before): a backlog in
    // the audit queue is not a loss, and re-sending it would only grow the backlog.
    void set_audit_behind(Milliseconds behind) noexcept {
        audit_behind_.set(std::chrono::duration<double>(behind).count());
    }
    Milliseconds audit_behind() const noexcept {
        return std::chrono::duration_cast<Milliseconds>(
            std::chrono::duration<double>(audit_behind_.value()));
    }

    // The audit saw a release probe come back (delay/topology.hpp) at `at`: the broker was
    // releasing then. Shown as the gauge hourglass_release_probe_returned_timestamp_seconds.
    // The audit's thread only.
    void set_probe_returned(TimePoint at) noexcept;
    // Since when probes have come back without a silence longer than kProbeSilence, if the last
    // came back within it before `now`: since when the broker releases and the audit observes.
    // Nothing while not: then no run is taken for lost (loader::ResendRule).
    std::optional<TimePoint> releasing_since(TimePoint now) const noexcept;

    // What a connection of `component` to `peer` holds while open, as a ScopedGaugeIncrement
    // (amqp::ConnectionOptions, store::StoreOptions). Null for a pair that does not connect.
    metrics::Gauge* open_connections(Component component, Peer peer) noexcept;
    bool connected(Component component, Peer peer) const noexcept;

    // Why the service is not ready (one short line), or nothing when it is: migrations
    // current, topology declared, every running component (the audit unless `audit_enabled`
    // is false) connected to each of its peers.
    std::optional<std::string> readiness_problem(bool audit_enabled) const;

private:
    Milliseconds::rep probe_returned_ms() const noexcept;  // 0: none yet

    std::shared_ptr<metrics::ServiceMetrics> metrics_;
    metrics::Gauge& migrations_current_;
    metrics::Gauge& topology_declared_;
    metrics::Gauge& audit_behind_;  // seconds
    metrics::Gauge& probe_returned_;  // Unix seconds; 0: none yet
    std::atomic<Milliseconds::rep> releasing_since_ms_{0};  // Unix milliseconds
    std::array<std::array<metrics::Gauge*, kPeers.size()>, kComponents.size()> open_connections_{};
};

}  // namespace hourglass::health
