#include "audit/audit_metrics.hpp"

namespace hourglass::audit {

AuditMetrics::AuditMetrics(metrics::Registry& registry)
    : releases_observed_(registry.add_counter("hourglass_releases_observed_total",
                                              "Releases observed by the audit consumer.")),
      release_lateness_seconds_(registry.add_histogram(
          "hourglass_release_lateness_seconds",
          "Observed release time minus the due time (or the time the command was accepted, if "
          "later).",
          metrics::kLatenessBuckets)) {}

void AuditMetrics::count_releases(std::size_t observed,
                                  const std::vector<double>& lateness_ms) noexcept {
    releases_observed_.increment(observed);
    for (const double ms : lateness_ms) release_lateness_seconds_.observe(ms / 1000.0);
}

}  // namespace hourglass::audit
