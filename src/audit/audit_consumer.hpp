// The audit (SPEC §5.4): consumes the copy of every release from the audit queue, which the
// delay queues dead-letter into next to the output exchange, and records `released_at`,
// `lateness_ms` and state `done` in batches. A batch is acked only after its update commits.
#pragma once

#include <stop_token>

#include "amqp/connection.hpp"
#include "delay/topology.hpp"
#include "hourglass/metrics.hpp"
#include "store/job_store.hpp"

namespace hourglass::audit {

struct AuditOptions {
    amqp::ConnectionOptions amqp;
    store::StoreOptions store;
    delay::TopologyNames names;
    std::uint16_t prefetch = 2000;
    std::size_t batch_size = 500;
    Milliseconds batch_wait{20};
    std::shared_ptr<metrics::ServiceMetrics> metrics = std::make_shared<metrics::ServiceMetrics>();
};

// Reads id, run and due from a released message's headers; nothing if they are missing.
std::optional<ObservedRelease> observed_release(const Message& message,
                                                std::chrono::sys_time<std::chrono::microseconds>
                                                    received_at);

void run_audit(const AuditOptions& options, std::stop_token stop);

}  // namespace hourglass::audit
