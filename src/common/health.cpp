#include "common/health.hpp"

#include <cmath>
#include <utility>

namespace hourglass::health {

std::string_view to_string(Component component) noexcept {
    switch (component) {
        case Component::ingest: return "ingest";
        case Component::loader: return "loader";
        case Component::audit: return "audit";
        case Component::forward: return "forward";
    }
    return "unknown";
}

std::string_view to_string(Peer peer) noexcept {
    return peer == Peer::rabbitmq ? "rabbitmq" : "postgresql";
}

namespace {

template <typename Table>
Table add_connection_gauges(metrics::Registry& registry) {
    Table gauges{};
    for (const auto component : kComponents) {
        for (const auto peer : kPeers) {
            if (!connects(component, peer)) continue;
            gauges[static_cast<std::size_t>(component)][static_cast<std::size_t>(peer)] =
                &registry.add_gauge("hourglass_connected",
                                    "Open connections of each component to RabbitMQ and "
                                    "PostgreSQL: 1 connected, 0 not.",
                                    {{"component", std::string(to_string(component))},
                                     {"peer", std::string(to_string(peer))}});
        }
    }
    return gauges;
}

}  // namespace

ServiceHealth::ServiceHealth(std::shared_ptr<metrics::ServiceMetrics> metrics)
    : metrics_(std::move(metrics)),
      migrations_current_(metrics_->registry().add_gauge(
          "hourglass_migrations_current",
          "1 if every migration this binary knows is applied to the schema, else 0.")),
      topology_declared_(metrics_->registry().add_gauge(
          "hourglass_topology_declared", "1 once the broker topology is declared, else 0.")),
      audit_behind_(metrics_->registry().add_gauge(
          "hourglass_audit_behind_seconds",
          "How far behind the releases the audit's latest batch was (the least time from a "
          "run's due time to its copy's arrival); runs wait that much longer to be re-sent.")),
      probe_returned_(metrics_->registry().add_gauge(
          "hourglass_release_probe_returned_timestamp_seconds",
          "When the audit last saw a release probe come back through the delay queues (Unix "
          "time); while none comes back, no run is taken for lost.")),
      open_connections_(add_connection_gauges<decltype(open_connections_)>(metrics_->registry())) {}

metrics::Gauge* ServiceHealth::open_connections(Component component, Peer peer) noexcept {
    return open_connections_[static_cast<std::size_t>(component)][static_cast<std::size_t>(peer)];
}

Milliseconds::rep ServiceHealth::probe_returned_ms() const noexcept {
    return static_cast<Milliseconds::rep>(std::llround(probe_returned_.value() * 1000.0));
}

void ServiceHealth::set_probe_returned(TimePoint at) noexcept {
    const auto at_ms = at.time_since_epoch().count();
    const auto last_ms = probe_returned_ms();
    if (last_ms == 0 || at_ms - last_ms > kProbeSilence.count()) {
        releasing_since_ms_.store(at_ms, std::memory_order_relaxed);
    }
    probe_returned_.set(static_cast<double>(at_ms) / 1000.0);
}

std::optional<TimePoint> ServiceHealth::releasing_since(TimePoint now) const noexcept {
    const auto last_ms = probe_returned_ms();
    if (last_ms == 0 || now.time_since_epoch().count() - last_ms > kProbeSilence.count()) {
        return std::nullopt;
    }
    return TimePoint{Milliseconds{releasing_since_ms_.load(std::memory_order_relaxed)}};
}

bool ServiceHealth::connected(Component component, Peer peer) const noexcept {
    const auto* gauge =
        open_connections_[static_cast<std::size_t>(component)][static_cast<std::size_t>(peer)];
    return gauge != nullptr && gauge->value() >= 1;
}

std::optional<std::string> ServiceHealth::readiness_problem(bool audit_enabled) const {
    std::string problems;
    const auto add = [&](const std::string& problem) {
        problems += (problems.empty() ? "" : "; ") + problem;
    };
    if (!migrations_current()) add("database migrations not applied");
    if (!topology_declared()) add("broker topology not declared");
    std::string disconnected;
    for (const auto component : kComponents) {
        if (component == Component::audit && !audit_enabled) continue;
        for (const auto peer : kPeers) {
            if (!connects(component, peer) || connected(component, peer)) continue;
            disconnected += (disconnected.empty() ? "" : ", ") + std::string(to_string(component)) +
                            " to " + std::string(to_string(peer));
        }
    }
    if (!disconnected.empty()) add("not connected: " + disconnected);
    if (problems.empty()) return std::nullopt;
    return "not ready: " + problems;
}

}  // namespace hourglass::health
