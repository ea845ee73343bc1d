#include "ingest/sql_intake.hpp"

#include <spdlog/spdlog.h>

#include "common/log_budget.hpp"
#include "common/retry.hpp"
#include "common/text.hpp"
#include "common/thread_name.hpp"

namespace hourglass::ingest {

namespace {

// How often a wait for commands looks whether the intake should stop.
constexpr Milliseconds kStopCheck{100};

// Commands taken through the SQL intake (/metrics).
class SqlIntakeMetrics {
public:
    explicit SqlIntakeMetrics(metrics::Registry& registry)
        : taken_(registry.add_counter("hourglass_sql_commands_total",
                                      "Commands taken from hourglass.commands (the SQL intake), "
                                      "each applied or rejected, its receipt written.")),
          rejected_(registry.add_counter("hourglass_sql_commands_rejected_total",
                                         "Commands of the SQL intake rejected (receipt status "
                                         "rejected, with the reason).")) {}
    void count(const std::vector<CommandOutcome>& outcomes) noexcept {
        taken_.increment(outcomes.size());
        for (const auto& outcome : outcomes) {
            if (outcome.status == CommandStatus::rejected) rejected_.increment();
        }
    }

private:
    metrics::Counter& taken_;
    metrics::Counter& rejected_;
};

void intake_session(const SqlIntakeOptions& options, const LoaderLink& loader,
                    SqlIntakeMetrics& metrics, std::stop_token stop) {
    const auto store = store::open_sql_command_store(options.store);
    const store::SqlCommandLimits limits{.commands = options.batch_size,
                                         .body_bytes = options.limits.max_body_bytes,
                                         .json_bytes = store::SqlCommandLimits{}.json_bytes};
    LogBudget rejection_lines;
    store::LeaderLockWatch leader_lock("sql_intake", "SQL intake",
                                       "no command is taken from " + options.store.schema + ".commands");
    spdlog::info("SQL intake: taking commands from {}.commands", options.store.schema);
    while (!stop.stop_requested()) {
        const auto taken_at = options.clock->now_ms();
        const auto batch = store->take_sql_commands(limits, [&](const store::SqlCommandRow& row) {
            return command_from_sql_row(row, taken_at, options.limits, options.names.input);
        });
        metrics.count(batch.outcomes);
        leader_lock.log(batch.held_elsewhere, *store, store::LeaderLockWatch::Clock::now());
        for (const auto id : batch.receipts_replaced) {
            spdlog::error("SQL intake: command {} had a receipt already (an earlier command was "
                          "given its id with OVERRIDING SYSTEM VALUE by a role granted INSERT on "
                          "the id column); its receipt now is this command's",
                          id);
        }
        std::optional<TimePoint> earliest_due;
        for (std::size_t i = 0; i < batch.outcomes.size(); ++i) {
            const auto& outcome = batch.outcomes[i];
            if (outcome.status == CommandStatus::rejected) {
                if (const auto grant = rejection_lines.take(LogBudget::Clock::now()); grant.log) {
                    spdlog::warn("SQL intake: command {} rejected: {}{}",
                                 quote_value(batch.commands[i].id, 64), outcome.error,
                                 left_out_note(grant.left_out, "rejections"));
                }
            } else if (outcome.due && (outcome.status == CommandStatus::scheduled ||
                                       outcome.status == CommandStatus::replaced ||
                                       outcome.status == CommandStatus::resumed)) {
                earliest_due = std::min(earliest_due.value_or(*outcome.due), *outcome.due);
            }
        }
        if (earliest_due && loader.wake && *earliest_due <= taken_at + options.horizon) {
            loader.wake(*earliest_due);
        }
        if (batch.more && !batch.held_elsewhere && batch.waiting == 0) continue;
        // Wait for a commit's notification, or the poll; a notification that came during the
        // take ends the wait at once. In slices, so that a stop is seen within one.
        const auto until = std::chrono::steady_clock::now() + options.poll;
        while (!stop.stop_requested() && std::chrono::steady_clock::now() < until &&
               !store->wait_for_commands(kStopCheck)) {
        }
    }
}

}  // namespace

void run_sql_intake(const SqlIntakeOptions& options, const LoaderLink& loader, std::stop_token stop) {
    name_this_thread("hg-sql-intake");
    SqlIntakeMetrics metrics(options.metrics->registry());
    run_with_reconnect("SQL intake", stop, [&] { intake_session(options, loader, metrics, stop); });
}

}  // namespace hourglass::ingest
