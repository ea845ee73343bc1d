// Keeps the metrics that come from PostgreSQL fresh (jobs per state, the oldest pending job's
// lag, whether the migrations are current): a thread with its own connection reads the
// counts of the hourglass.stats view every `interval`, and its lateness percentiles at a pace
// of their own (StatsReadPace), so a scrape never queries the database and many scrapes cost
// no more than one. A failed read is retried at the next interval. Before each
// read it folds the per-statement count changes (migration 004); it runs whether or not the
// HTTP endpoint is on, so the changes never pile up.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "common/database_clock.hpp"
#include "common/health.hpp"
#include "common/metrics.hpp"
#include "hourglass/time.hpp"
#include "store/upkeep_store.hpp"

namespace hourglass::http {

// Since migration 004 the view reads counters and indexes, not the whole table (before it, one
// read took 3.7–7 s at 10 M jobs; bench/journal/2026-11-22-to-12-04.md). As a guard against whatever a read
// still costs (the lateness percentiles of a very busy hour), the refresher waits at least
// kStatsReadShare times a part's last read before it reads that part again, so neither part
// of the view takes more than 1/kStatsReadShare of PostgreSQL's time.
inline constexpr int kStatsReadShare = 20;
Milliseconds next_stats_refresh(Milliseconds interval, Milliseconds last_read);

// When each part of the stats view (migration 014) is next read, each paced by its own last
// read: the counts (milliseconds at any size) every interval, the lateness percentiles (they
// sort every release of the last hour: 1.3–1.75 s at 1,000 releases/s) at their slower pace,
// so that a costly percentile read never makes the job gauges and the oldest pending lag stale.
class StatsReadPace {
public:
    using Clock = std::chrono::steady_clock;
    explicit StatsReadPace(Milliseconds interval) : interval_(interval) {}

    bool counts_due(Clock::time_point now) const { return now >= next_counts_; }
    bool lateness_due(Clock::time_point now) const { return now >= next_lateness_; }
    // A read that started at `started` ended at `ended`.
    void counts_read(Clock::time_point started, Clock::time_point ended);
    void lateness_read(Clock::time_point started, Clock::time_point ended);
    // How long to wait from `now` until the counts are due again (the lateness is read with
    // the counts whose turn comes after it is due).
    Milliseconds wait(Clock::time_point now) const;

private:
    Clock::time_point next_after(Clock::time_point started, Clock::time_point ended) const;

    Milliseconds interval_;
    Clock::time_point next_counts_{};    // due at once
    Clock::time_point next_lateness_{};  // due at once
};

class StatsRefresher {
public:
    // Registers its gauges in the metrics' registry: jobs per state and the oldest pending lag
    // from the stats view, and hourglass_instances_alive, the instances that beat within
    // `silent_for` (the loader's takeover time), for the dashboard and the alert.
    // `clock` times each read (Reading::read_at), on the service's one clock.
    // Reports to `health` whether the migrations are current.
    StatsRefresher(store::StoreOptions store, metrics::ServiceMetrics& metrics,
                   health::ServiceHealth& health, Milliseconds interval = Milliseconds{5000},
                   Milliseconds silent_for = Milliseconds{3000},
                   std::shared_ptr<const DatabaseClock> clock = std::make_shared<DatabaseClock>());
    ~StatsRefresher();  // stops the thread
    StatsRefresher(const StatsRefresher&) = delete;
    StatsRefresher& operator=(const StatsRefresher&) = delete;

    struct Reading {
        Stats stats;
        TimePoint read_at;  // of the counts
        std::optional<TimePoint> lateness_read_at;  // of stats.lateness, none before the first
    };
    // The last successful read, for the console (many open pages cost PostgreSQL nothing).
    std::optional<Reading> latest() const;

private:
    void refresh_until_stopped(std::stop_token stop);

    store::StoreOptions store_options_;
    health::ServiceHealth& health_;
    Milliseconds interval_;
    Milliseconds silent_for_;
    std::shared_ptr<const DatabaseClock> clock_;
    metrics::Gauge& instances_alive_;
    metrics::Gauge& jobs_pending_;
    metrics::Gauge& jobs_enqueued_;
    metrics::Gauge& jobs_done_;
    metrics::Gauge& jobs_cancelled_;
    metrics::Gauge& jobs_paused_;
    metrics::Gauge& sql_commands_waiting_;
    metrics::Gauge& oldest_pending_lag_seconds_;
    mutable std::mutex latest_mutex_;
    std::optional<Reading> latest_;
    std::jthread thread_;
};

}  // namespace hourglass::http
