// GET /readyz (reference §9): the service is ready when the migrations it knows are applied, the
// broker topology is declared, and every running component (ingest, loader, and audit unless
// --no-audit) holds open connections to both RabbitMQ and PostgreSQL. All of it is read from
// the metrics, so /readyz and /metrics never disagree.
#pragma once

#include <optional>
#include <string>

#include "common/metrics.hpp"

namespace hourglass::http {

// Why the service is not ready (one short line), or nothing when it is.
std::optional<std::string> readiness_problem(const metrics::ServiceMetrics& metrics,
                                             bool audit_enabled);

}  // namespace hourglass::http
