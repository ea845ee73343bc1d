// Ingest (SPEC §3): consumes commands from hourglass.in with manual acks and a prefetch
// window, validates them, applies a batch in one PostgreSQL transaction, publishes
// rejections and receipts with publisher confirms, and only then acks the batch.
// Nothing is acked before its effect is committed; a failure drops the connection so the
// broker redelivers, and job ids make the redelivery harmless.
#pragma once

#include <functional>
#include <stop_token>

#include "amqp/connection.hpp"
#include "delay/topology.hpp"
#include "hourglass/command.hpp"
#include "hourglass/metrics.hpp"
#include "store/job_store.hpp"

namespace hourglass::ingest {

struct IngestOptions {
    amqp::ConnectionOptions amqp;
    store::StoreOptions store;
    delay::TopologyNames names;
    CommandLimits limits;
    std::uint16_t prefetch = 2000;
    std::size_t batch_size = 500;
    // How long to wait for more commands once one arrived. 0: take what has already arrived
    // (batches then grow by themselves under load, while the previous commit runs).
    Milliseconds batch_wait{0};
    Milliseconds horizon{60000};
    std::shared_ptr<metrics::ServiceMetrics> metrics = std::make_shared<metrics::ServiceMetrics>();
};

// Called after a commit when an accepted job is due within the horizon.
using WakeLoader = std::function<void()>;

void run_ingest(const IngestOptions& options, const WakeLoader& wake_loader, std::stop_token stop);

// The message published to hourglass.rejected for a rejected command: the command unchanged
// plus the x-hourglass-error header.
Message rejected_message(const Message& command, const std::string& exchange,
                         const std::string& error);

}  // namespace hourglass::ingest
