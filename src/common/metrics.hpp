// Metrics (reference §9: /metrics in the Prometheus text format).
//
// Counter, Gauge and Histogram are updated with atomics only, so the pipeline's threads never
// take a lock to count. A Registry owns them and renders all of them in the Prometheus text
// exposition format (version 0.0.4); registration takes a lock and happens at start-up.
// Label values are fixed when a series is registered, so the number of series is bounded.
//
// ServiceMetrics holds the registry of one service and the series that belong to no single
// component (build). Each component registers its own series in that registry when it starts
// (ingest/ingest_metrics.hpp, loader/loader_metrics.hpp, common/health.hpp, ...).
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

// Histogram buckets for lateness, in seconds (Prometheus's base unit): 1 ms to 1 s.
inline const std::vector<double> kLatenessBuckets{0.001, 0.002, 0.005, 0.01, 0.02,
                                                  0.05,  0.1,   0.2,   0.5,  1};

// The registry of one service, which the components add their series to, with the series of
// no single component (hourglass_build_info; the health's are health::ServiceHealth's).
class ServiceMetrics {
public:
    ServiceMetrics();
    ServiceMetrics(const ServiceMetrics&) = delete;
    ServiceMetrics& operator=(const ServiceMetrics&) = delete;

    const Registry& registry() const noexcept { return registry_; }
    // Each component registers its own series here when it starts.
    Registry& registry() noexcept { return registry_; }

private:
    Registry registry_;
};

}  // namespace hourglass::metrics
