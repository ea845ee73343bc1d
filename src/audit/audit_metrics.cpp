#include "audit/audit_metrics.hpp"

namespace hourglass::audit {

AuditMetrics::AuditMetrics(metrics::Registry& registry)
    : release_copies_(registry.add_counter(
          "hourglass_release_copies_total",
          "Release copies the audit consumed: one per release group (runs due at one instant "
          "in one delay queue).")),
      releases_observed_(registry.add_counter(
          "hourglass_releases_observed_total",
          "Releases the audit recorded: the run of each copy and the rest of its group.")),
      release_lateness_seconds_(registry.add_histogram(
          "hourglass_release_lateness_seconds",
          "Observed release time minus the due time (or the time the command was accepted, if "
          "later).",
          metrics::kLatenessBuckets)),
      releases_waiting_(registry.add_gauge(
          "hourglass_releases_waiting",
          "Releases observed and not yet recorded because another PostgreSQL transaction "
          "holds their runs' rows: parked in parked_releases (every instance's), recorded once "
          "the lock ends; the other releases are recorded meanwhile.")) {}

void AuditMetrics::count_releases(std::size_t copies,
                                  const std::vector<double>& lateness_ms) noexcept {
    release_copies_.increment(copies);
    releases_observed_.increment(lateness_ms.size());
    for (const double ms : lateness_ms) release_lateness_seconds_.observe(ms / 1000.0);
}

}  // namespace hourglass::audit
