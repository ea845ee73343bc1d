// The audit's series (/metrics): releases recorded, how late each was, and the copies whose
// record waits for a row lock.
#pragma once

#include <cstddef>
#include <vector>

#include "common/metrics.hpp"

namespace hourglass::audit {

class AuditMetrics {
public:
    // Registers the series in `registry`, once per service.
    explicit AuditMetrics(metrics::Registry& registry);

    // `copies` release copies consumed, and the releases they recorded (each copy's run and
    // the rest of its release group) with the lateness of each in milliseconds (lateness_ms in
    // the jobs table).
    void count_releases(std::size_t copies, const std::vector<double>& lateness_ms) noexcept;
    // Releases parked because another transaction holds their runs' rows (any instance's).
    void set_releases_waiting(std::size_t releases) noexcept {
        releases_waiting_.set(static_cast<double>(releases));
    }

private:
    metrics::Counter& release_copies_;
    metrics::Counter& releases_observed_;
    metrics::Histogram& release_lateness_seconds_;
    metrics::Gauge& releases_waiting_;
};

}  // namespace hourglass::audit
