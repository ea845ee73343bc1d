#include "http/readiness.hpp"

namespace hourglass::http {

std::optional<std::string> readiness_problem(const metrics::ServiceMetrics& metrics,
                                             bool audit_enabled) {
    std::string problems;
    const auto add = [&](const std::string& problem) {
        problems += (problems.empty() ? "" : "; ") + problem;
    };
    if (!metrics.migrations_current()) add("database migrations not applied");
    if (!metrics.topology_declared()) add("broker topology not declared");
    std::string disconnected;
    for (const auto component : metrics::kComponents) {
        if (component == metrics::Component::audit && !audit_enabled) continue;
        for (const auto peer : metrics::kPeers) {
            if (!metrics::connects(component, peer)) continue;
            if (metrics.connected(component, peer)) continue;
            disconnected += (disconnected.empty() ? "" : ", ") +
                            std::string(metrics::to_string(component)) + " to " +
                            std::string(metrics::to_string(peer));
        }
    }
    if (!disconnected.empty()) add("not connected: " + disconnected);
    if (problems.empty()) return std::nullopt;
    return "not ready: " + problems;
}

}  // namespace hourglass::http
