// The audit's series (/metrics): releases recorded and how late each was.
#pragma once

#include <cstddef>
#include <vector>

#include "hourglass/metrics.hpp"

namespace hourglass::audit {

class AuditMetrics {
public:
    // Registers the series in `registry`, once per service.
    explicit AuditMetrics(metrics::Registry& registry);

    // Releases recorded, with the lateness of each in milliseconds (lateness_ms in the jobs
    // table).
    void count_releases(std::size_t observed, const std::vector<double>& lateness_ms) noexcept;

private:
    metrics::Counter& releases_observed_;
    metrics::Histogram& release_lateness_seconds_;
};

}  // namespace hourglass::audit
