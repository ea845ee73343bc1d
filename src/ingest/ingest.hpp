// Ingest (reference §3): consumes commands from hourglass.in with manual acks and a prefetch
// window, validates them, applies a batch in one PostgreSQL transaction, publishes
// rejections and receipts with publisher confirms, and only then acks the batch.
// Nothing is acked before its effect is committed; a failure drops the connection so the
// broker redelivers, and job ids make the redelivery harmless. A command whose job row another
// transaction keeps locked waits unacked, and is tried again, while the others go on.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <unordered_set>
#include <vector>

#include "amqp/connection.hpp"
#include "common/database_clock.hpp"
#include "common/metrics.hpp"
#include "delay/topology.hpp"
#include "hourglass/command.hpp"
#include "hourglass/defaults.hpp"
#include "hourglass/job.hpp"
#include "ingest/command_channel.hpp"
#include "store/command_store.hpp"
#include "store/store_options.hpp"

namespace hourglass::ingest {

struct IngestOptions {
    amqp::ConnectionOptions amqp;
    store::StoreOptions store;
    delay::TopologyNames names;
    CommandLimits limits;
    std::uint16_t prefetch = 2000;
    std::size_t batch_size = 500;
    // A batch also ends once its bodies reach this many bytes (2,000 prefetched 1 MiB bodies
    // must not be held at once).
    std::size_t batch_bytes = 16u << 20;
    // How long to wait for more commands once one arrived. 0: take what has already arrived
    // (batches then grow by themselves under load, while the previous commit runs).
    Milliseconds batch_wait{0};
    Milliseconds horizon = kDefaultHorizon;
    std::shared_ptr<metrics::ServiceMetrics> metrics = std::make_shared<metrics::ServiceMetrics>();
    // The one clock (reference §6), shared with the service's other components.
    std::shared_ptr<DatabaseClock> clock = std::make_shared<DatabaseClock>();
};

// What ingest tells this instance's loader. Members left empty are not called.
struct LoaderLink {
    // After a commit that accepted jobs due within the horizon that it did not claim at insert,
    // with the earliest due time.
    std::function<void(TimePoint earliest_due)> wake;
    // Claims at insert (InsertClaimOffer, loader::Loader::offer_insert_claims): room for the
    // plain one-shot schedules of a batch due within the horizon, asked for before the batch
    // is applied, and the runs leased under it, handed over once the batch is committed (none
    // if it failed).
    std::function<std::optional<InsertClaimOffer>(std::size_t runs, std::size_t bytes)> offer_claims;
    std::function<void(const InsertClaimOffer&, std::vector<ClaimedRun>)> adopt_claims;
};

// What ingest reaches outside itself. Every member left empty means the real thing
// (store::JobStore, <prefix>.in on an AMQP connection, the process's one clock); unit tests
// inject fakes.
struct IngestSeams {
    std::function<std::unique_ptr<store::CommandStore>(const store::StoreOptions&)> open_store;
    std::function<std::unique_ptr<CommandChannel>(const IngestOptions&)> open_channel;
    // When a command was received (x-delay counts from it) and where the horizon ends.
    std::function<TimePoint()> now;
};

// Consumes <prefix>.in until `stop`, reconnecting with backoff: commands are applied in
// batches, and a batch is acked once committed and once its rejected copies are confirmed.
void run_ingest(const IngestOptions& options, const LoaderLink& loader, std::stop_token stop,
                IngestSeams seams = {});

// The message published to hourglass.rejected for a rejected command: the command unchanged
// plus the x-hourglass-error header. If its properties would take more than
// `max_properties_bytes` (the frame would exceed frame_max), the largest headers are dropped
// from the copy and named in x-hourglass-error (reference §4).
Message rejected_message(const Message& command, const std::string& exchange,
                         const std::string& error, std::size_t max_properties_bytes);

// Applies commands in order through `apply` (the store). When the store refuses them for their
// data (store::classify_failure), the batch is split until the command at fault is found; that
// one is rejected with the database's reason and the others are applied. A transient failure
// propagates: nothing is acked and the batch is tried again after a reconnect.
// A command whose job row another transaction keeps locked (store::FailureKind::busy, found the
// same way) waits: it is not applied and has no outcome, its id joins `waiting_ids`, and no
// later command for an id in `waiting_ids` is applied either, so that the commands of one job
// keep their order.
using ApplyCommands = std::function<std::vector<CommandOutcome>(std::span<const Command>)>;
using Outcomes = std::vector<std::optional<CommandOutcome>>;  // empty: the command waits
Outcomes apply_isolating(std::span<const Command> commands, const ApplyCommands& apply,
                         std::unordered_set<std::string>& waiting_ids);

}  // namespace hourglass::ingest
