// The SQL intake (reference §3.4): commands an application inserts into hourglass.commands in
// its own transaction. Each row is turned into the message the same command would be on
// <prefix>.in and parsed by the one parser (parse_command), with the same limits; the store
// applies them, writes their receipts and deletes them in one transaction. A notification at
// commit wakes the intake; it also polls.
#pragma once

#include <stop_token>
#include <string>
#include <variant>

#include "common/database_clock.hpp"
#include "common/metrics.hpp"
#include "hourglass/command.hpp"
#include "hourglass/defaults.hpp"
#include "hourglass/message.hpp"
#include "ingest/ingest.hpp"
#include "ingest/sql_rows.hpp"
#include "store/sql_command_store.hpp"

namespace hourglass::ingest {

struct SqlIntakeOptions {
    store::StoreOptions store;
    delay::TopologyNames names;
    CommandLimits limits;
    std::size_t batch_size = 500;
    Milliseconds horizon = kDefaultHorizon;
    // How often the intake looks for commands when no notification came.
    Milliseconds poll{1000};
    std::shared_ptr<metrics::ServiceMetrics> metrics = std::make_shared<metrics::ServiceMetrics>();
    // The one clock (reference §6): x-delay counts from the take on PostgreSQL's clock, as the
    // AMQP door counts it from the delivery; the host's own clock may be behind it.
    std::shared_ptr<const DatabaseClock> clock = std::make_shared<DatabaseClock>();
};

// Takes commands from hourglass.commands until `stop`, reconnecting with backoff.
void run_sql_intake(const SqlIntakeOptions& options, const LoaderLink& loader, std::stop_token stop);

}  // namespace hourglass::ingest
