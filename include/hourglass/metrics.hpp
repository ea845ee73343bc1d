// Metrics (SPEC §8: /metrics in the Prometheus text format).
//
// Counter, Gauge and Histogram are updated with atomics only, so the pipeline's threads never
// take a lock to count. A Registry owns them and renders all of them in the Prometheus text
// exposition format (version 0.0.4); registration takes a lock and happens at start-up.
// Label values are fixed when a series is registered, so the number of series is bounded.
//
// ServiceMetrics registers every hourglass_ metric once; components receive it through their
// options and update the series they own.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "hourglass/command.hpp"

namespace hourglass::metrics {

// A monotonically increasing count.
class Counter {
public:
    void increment(std::uint64_t by = 1) noexcept {
        value_.fetch_add(by, std::memory_order_relaxed);
    }
    std::uint64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> value_{0};
};

// A value that goes up and down.
class Gauge {
public:
    void set(double value) noexcept { value_.store(value, std::memory_order_relaxed); }
    void add(double delta) noexcept { value_.fetch_add(delta, std::memory_order_relaxed); }
    double value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<double> value_{0.0};
};

// Observations counted in buckets with fixed upper bounds (plus +Inf).
class Histogram {
public:
    // `upper_bounds` must be finite and strictly increasing; throws std::invalid_argument.
    explicit Histogram(std::vector<double> upper_bounds);
    void observe(double value) noexcept;

    struct Snapshot {
        std::vector<double> upper_bounds;
        std::vector<std::uint64_t> cumulative_counts;  // one per bound, then +Inf (= count)
        double sum = 0;
    };
    Snapshot snapshot() const;

private:
    std::vector<double> upper_bounds_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> bucket_counts_;  // per bound, then overflow
    std::atomic<double> sum_{0.0};
};

// Adds 1 to a gauge for as long as it lives (e.g. open connections); nothing if the gauge is null.
class ScopedGaugeIncrement {
public:
    ScopedGaugeIncrement() noexcept = default;
    explicit ScopedGaugeIncrement(Gauge* gauge) noexcept;
    ~ScopedGaugeIncrement();
    ScopedGaugeIncrement(const ScopedGaugeIncrement&) = delete;
    ScopedGaugeIncrement& operator=(const ScopedGaugeIncrement&) = delete;
    ScopedGaugeIncrement(ScopedGaugeIncrement&& other) noexcept;
    ScopedGaugeIncrement& operator=(ScopedGaugeIncrement&& other) noexcept;

private:
    Gauge* gauge_ = nullptr;
};

using Labels = std::vector<std::pair<std::string, std::string>>;

class Registry {
public:
    // Registers one series. Series of one name share help and type and differ in their labels.
    // Throws std::invalid_argument for an invalid name or label, a name registered with another
    // type or help, or a label set registered twice. The reference stays valid as long as the
    // registry lives.
    Counter& add_counter(const std::string& name, const std::string& help, Labels labels = {});
    Gauge& add_gauge(const std::string& name, const std::string& help, Labels labels = {});
    Histogram& add_histogram(const std::string& name, const std::string& help,
                             std::vector<double> upper_bounds, Labels labels = {});

    // Every series in the Prometheus text exposition format 0.0.4, in registration order.
    std::string render_prometheus() const;

private:
    using Metric = std::variant<const Counter*, const Gauge*, const Histogram*>;
    struct Series {
        Labels labels;
        Metric metric;
    };
    struct Family {
        std::string name;
        std::string help;
        std::size_t type;  // index of the Metric alternative: all series of a family share it
        std::vector<Series> series;
    };
    void add_series(const std::string& name, const std::string& help, Labels labels, Metric metric);
    template <typename T, typename... Arguments>
    T& add(std::deque<T>& storage, const std::string& name, const std::string& help, Labels labels,
           Arguments&&... arguments);

    mutable std::mutex mutex_;
    std::vector<Family> families_;
    std::deque<Counter> counters_;  // deques: elements never move, references stay valid
    std::deque<Gauge> gauges_;
    std::deque<Histogram> histograms_;
};

// The content type of Registry::render_prometheus().
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

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

// The short, stable code a rejection is counted under (label `reason`), derived from the field
// its error names ("x-delay: -5 (i32) is negative" -> "x-delay"). One of rejection_reasons();
// errors naming nothing known count as "other", so the label never grows beyond that list.
std::string_view rejection_reason(std::string_view error) noexcept;
const std::vector<std::string_view>& rejection_reasons();

// Every hourglass_ metric. Components update the series they own; the service wires them up.
class ServiceMetrics {
public:
    ServiceMetrics();
    ServiceMetrics(const ServiceMetrics&) = delete;
    ServiceMetrics& operator=(const ServiceMetrics&) = delete;

    const Registry& registry() const noexcept { return registry_; }
    // Components that own their metrics register them here (e.g. the retention pruner).
    Registry& registry() noexcept { return registry_; }

    // Ingest: deliveries taken from <prefix>.in, and each command's outcome once acked.
    void count_received(std::size_t commands) noexcept { commands_received_.increment(commands); }
    void count_outcomes(const std::vector<CommandOutcome>& outcomes) noexcept;
    // Loader: runs recorded as handed over to the delay topology; publishes awaiting a confirm.
    void count_runs_enqueued(std::size_t runs) noexcept { runs_enqueued_.increment(runs); }
    void count_runs_resent(std::size_t runs) noexcept { runs_resent_.increment(runs); }
    // How long after its publish instant (due − TTL) a run was published into a delay queue:
    // its release is late by at least this, whatever the broker does (README "Benchmarks").
    void observe_handover_lateness(std::chrono::microseconds lateness) noexcept;
    void set_unconfirmed_publishes(std::size_t publishes) noexcept {
        unconfirmed_publishes_.set(static_cast<double>(publishes));
    }
    // Forwarder: released runs with a target exchange, published to it (`forwarded`) or, when
    // it could not route them or was gone, to <prefix>.unroutable (`unroutable`).
    void count_forwarded(std::size_t releases) noexcept { releases_forwarded_.increment(releases); }
    void count_forwarded_unroutable(std::size_t releases) noexcept {
        releases_forwarded_unroutable_.increment(releases);
    }
    // Audit: releases recorded, with the lateness of each (lateness_ms of SPEC §7).
    void count_releases(std::size_t observed, const std::vector<double>& lateness_ms) noexcept;
    // Refreshed from the hourglass.stats view.
    void set_job_counts(std::int64_t pending, std::int64_t enqueued, std::int64_t done,
                        std::int64_t cancelled) noexcept;
    void set_oldest_pending_lag_ms(std::int64_t lag_ms) noexcept;
    // Readiness inputs (GET /readyz).
    void set_migrations_current(bool current) noexcept { migrations_current_.set(current ? 1 : 0); }
    void set_topology_declared(bool declared) noexcept { topology_declared_.set(declared ? 1 : 0); }
    bool migrations_current() const noexcept { return migrations_current_.value() >= 1; }
    bool topology_declared() const noexcept { return topology_declared_.value() >= 1; }

    // Open connections of a component to a peer (0 or 1). Connections hold a
    // ScopedGaugeIncrement on it (amqp::ConnectionOptions, store::StoreOptions). Null for a
    // pair that does not connect (see connects()).
    Gauge* open_connections(Component component, Peer peer) noexcept;
    bool connected(Component component, Peer peer) const noexcept;

private:
    static constexpr std::size_t kStatusCount = 7;

    Registry registry_;
    Counter& commands_received_;
    std::array<Counter*, kStatusCount> commands_by_status_{};
    std::vector<std::pair<std::string_view, Counter*>> commands_rejected_by_reason_;
    Counter& runs_enqueued_;
    Counter& runs_resent_;
    Counter& releases_observed_;
    Counter& releases_forwarded_;
    Counter& releases_forwarded_unroutable_;
    Histogram& release_lateness_seconds_;
    Histogram& handover_lateness_seconds_;
    Gauge& jobs_pending_;
    Gauge& jobs_enqueued_;
    Gauge& jobs_done_;
    Gauge& jobs_cancelled_;
    Gauge& oldest_pending_lag_seconds_;
    Gauge& unconfirmed_publishes_;
    Gauge& migrations_current_;
    Gauge& topology_declared_;
    std::array<std::array<Gauge*, kPeers.size()>, kComponents.size()> open_connections_{};
};

}  // namespace hourglass::metrics
