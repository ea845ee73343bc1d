// Keeps the metrics that come from PostgreSQL fresh (jobs per state, the oldest pending job's
// lag, whether the migrations are current): a thread with its own connection reads the
// hourglass.stats view every `interval`, so a scrape never queries the database and many
// scrapes cost no more than one. A failed read is retried at the next interval. Before each
// read it folds the per-statement count changes (migration 004); it runs whether or not the
// HTTP endpoint is on, so the changes never pile up.
#pragma once

#include <mutex>
#include <optional>
#include <thread>

#include "hourglass/metrics.hpp"
#include "hourglass/time.hpp"
#include "store/job_store.hpp"

namespace hourglass::http {

// Since migration 004 the view reads counters and indexes, not the whole table (before it, one
// read took 3.7–7 s at 10 M jobs; docs/benchmarks.md). As a guard against whatever a read
// still costs (the lateness percentiles of a very busy hour), the refresher waits at least
// kStatsReadShare times its last read's duration before the next one, so reading the view
// never takes more than 1/kStatsReadShare of PostgreSQL's time.
inline constexpr int kStatsReadShare = 20;
Milliseconds next_stats_refresh(Milliseconds interval, Milliseconds last_read);

class StatsRefresher {
public:
    // Registers its gauges in the metrics' registry: jobs per state and the oldest pending lag
    // from the stats view, and hourglass_instances_alive, the instances that beat within
    // `silent_for` (the loader's takeover time), for the dashboard and the alert.
    StatsRefresher(store::StoreOptions store, metrics::ServiceMetrics& metrics,
                   Milliseconds interval = Milliseconds{5000},
                   Milliseconds silent_for = Milliseconds{3000});
    ~StatsRefresher();  // stops the thread
    StatsRefresher(const StatsRefresher&) = delete;
    StatsRefresher& operator=(const StatsRefresher&) = delete;

    struct Reading {
        Stats stats;
        TimePoint read_at;
    };
    // The last successful read, for the console (many open pages cost PostgreSQL nothing).
    std::optional<Reading> latest() const;

private:
    void refresh_until_stopped(std::stop_token stop);

    store::StoreOptions store_options_;
    metrics::ServiceMetrics& metrics_;
    Milliseconds interval_;
    Milliseconds silent_for_;
    metrics::Gauge& instances_alive_;
    metrics::Gauge& jobs_pending_;
    metrics::Gauge& jobs_enqueued_;
    metrics::Gauge& jobs_done_;
    metrics::Gauge& jobs_cancelled_;
    metrics::Gauge& oldest_pending_lag_seconds_;
    mutable std::mutex latest_mutex_;
    std::optional<Reading> latest_;
    std::jthread thread_;
};

}  // namespace hourglass::http
