#include "cli/commands.hpp"

#include "cli/service.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <thread>

#include "common/thread_name.hpp"
#include "common/metrics.hpp"
#include "retention/pruner.hpp"
#include "store/migrations.hpp"
#include "store/upkeep_store.hpp"

namespace hourglass::cli {

namespace {

// Blocks SIGTERM and SIGINT in the calling thread and every thread started after it (so
// construct it before any), and turns the first one into a stop request. If the service has not
// stopped `deadline` after the signal (a broker that blocks publishers, a database that hangs),
// the process exits anyway: what is unfinished is unacked or leased, so redelivery and lease
// takeover finish it and nothing is lost (reference §9). The destructor, also when start-up fails
// with an exception, ends the thread waiting for the signal.
class StopOnSignal {
public:
    StopOnSignal(std::stop_source& stop, Milliseconds deadline) : stop_(stop) {
        sigset_t signals;
        sigemptyset(&signals);
        sigaddset(&signals, SIGTERM);
        sigaddset(&signals, SIGINT);
        pthread_sigmask(SIG_BLOCK, &signals, nullptr);
        thread_ = std::jthread([this, signals, deadline](std::stop_token) {
            name_this_thread("hg-signals");
            int received = 0;
            sigwait(&signals, &received);
            if (stop_.stop_requested()) return;  // woken by the destructor
            spdlog::info("received {}, stopping: no new commands, finishing in-flight work "
                         "(at most {} ms)",
                         received == SIGTERM ? "SIGTERM" : "SIGINT", deadline.count());
            stop_.request_stop();
            std::unique_lock lock(mutex_);
            if (!stopped_wake_.wait_for(lock, deadline, [this] { return stopped_; })) {
                spdlog::warn("not stopped {} ms after the signal: exiting now; unacked commands "
                             "are redelivered and leased runs taken over",
                             deadline.count());
                spdlog::default_logger()->flush();
                std::_Exit(0);
            }
        });
    }
    ~StopOnSignal() {
        {
            std::lock_guard lock(mutex_);
            stopped_ = true;
        }
        stopped_wake_.notify_all();
        if (!stop_.stop_requested()) {
            stop_.request_stop();
            pthread_kill(thread_.native_handle(), SIGTERM);  // blocked, so only sigwait sees it
        }
        thread_.join();
    }
    StopOnSignal(const StopOnSignal&) = delete;
    StopOnSignal& operator=(const StopOnSignal&) = delete;

private:
    std::stop_source& stop_;
    std::mutex mutex_;
    std::condition_variable stopped_wake_;
    bool stopped_ = false;
    std::jthread thread_;
};

std::string format_optional(const std::optional<double>& value) {
    if (!value) return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", *value);
    return text;
}

}  // namespace

int run_migrate(const ServiceOptions& options, bool dry_run) {
    const auto report = store::migrate(options.store(), dry_run);
    for (const auto& name : report.already_applied) std::cout << "applied   " << name << "\n";
    for (const auto& name : report.applied) {
        std::cout << (dry_run ? "pending   " : "applying  ") << name << "\n";
    }
    std::cout << (report.applied.empty() ? "schema is current" :
                  dry_run ? "dry run: nothing applied" : "migrations applied")
              << " (schema " << options.schema << ")\n";
    return 0;
}

namespace {

// Instances hold a leader lock for one transaction (a batch of the SQL intake or retention);
// a holder open this long is something else, which stops that task for every instance.
constexpr Milliseconds kLeaderLockHeldLong{5000};

// "none", or each leader lock held long and by whom (store/leader_locks.hpp).
std::string leader_locks_held_long(store::StatsStore& store) {
    std::string text;
    for (const auto& holder : store.leader_lock_holders()) {
        if (holder.open_for && *holder.open_for < kLeaderLockHeldLong) continue;
        text += (text.empty() ? "" : "; ") + holder.lock + " held by " + store::describe(holder);
    }
    return text.empty() ? "none" : text;
}

}  // namespace

int run_status(const ServiceOptions& options) {
    const auto store = store::open_stats_store(options.store());
    const auto stats = store->stats();
    const auto row = [](std::string_view label, const std::string& value) {
        char line[128];
        std::snprintf(line, sizeof line, "%-22s %s\n", std::string(label).c_str(), value.c_str());
        return std::string(line);
    };
    std::cout << row("pending", std::to_string(stats.pending))
              << row("enqueued", std::to_string(stats.enqueued))
              << row("done", std::to_string(stats.done))
              << row("cancelled", std::to_string(stats.cancelled))
              << row("paused", std::to_string(stats.paused))
              << row("sql commands waiting",
                     stats.sql_commands_waiting > kSqlCommandsCountCap
                         ? "more than " + std::to_string(kSqlCommandsCountCap)
                         : std::to_string(stats.sql_commands_waiting))
              << row("oldest pending lag", std::to_string(stats.oldest_pending_lag_ms) + " ms")
              << row("next due", stats.next_due_at ? format_rfc3339_ms(*stats.next_due_at) : "-")
              << row("lateness, last hour",
                     "p50 " + format_optional(stats.lateness.p50_ms) + " ms, p99 " +
                         format_optional(stats.lateness.p99_ms) + " ms, max " +
                         format_optional(stats.lateness.max_ms) + " ms")
              << row("leader locks held", leader_locks_held_long(*store));
    return 0;
}

int run_prune(const ServiceOptions& options, bool dry_run) {
    const auto retention = options.retention_options();
    if (!retention) {
        std::cout << "retention is off: nothing to prune\n";
        return 0;
    }
    const auto jobs = store::open_retention_store(options.store());
    const auto& before = options.retention;
    if (dry_run) {
        std::cout << jobs->count_prunable(retention->retention)
                  << " ended jobs (done or cancelled, one-shot) ended more than " << before
                  << " ago would be deleted; table and indexes: " << jobs->table_bytes()
                  << " bytes\n";
        return 0;
    }
    std::size_t progress = 0;
    const auto deleted = retention::prune_round(
        [&](std::size_t limit) { return jobs->prune_ended(retention->retention, limit); },
        *retention, std::stop_token{}, [&](std::size_t batch) {
            progress += batch;
            if (progress % 100000 < batch) std::cout << "deleted " << progress << " ...\n" << std::flush;
        });
    std::cout << "deleted " << deleted << " ended jobs older than " << before
              << "; table and indexes: " << jobs->table_bytes() << " bytes\n";
    return 0;
}

int run_service(const ServiceOptions& options) {
    // The configuration is checked before any thread starts, and signals are blocked before.
    Service service(options);
    std::stop_source stop;
    const StopOnSignal stop_on_signal(stop, options.stop_timeout_ms());
    service.run(stop.get_token());
    return 0;
}

}  // namespace hourglass::cli
