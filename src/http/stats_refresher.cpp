#include "http/stats_refresher.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "common/retry.hpp"
#include "common/thread_name.hpp"

namespace hourglass::http {

namespace {
metrics::Gauge& add_jobs_gauge(metrics::Registry& registry, const std::string& state) {
    return registry.add_gauge("hourglass_jobs",
                              "Jobs per state, from the stats view (refreshed every few seconds).",
                              {{"state", state}});
}
}  // namespace

StatsRefresher::StatsRefresher(store::StoreOptions store, metrics::ServiceMetrics& metrics,
                               health::ServiceHealth& health, Milliseconds interval, Milliseconds silent_for,
                               std::shared_ptr<const DatabaseClock> clock)
    : store_options_(std::move(store)),
      health_(health),
      interval_(interval),
      silent_for_(silent_for),
      clock_(std::move(clock)),
      instances_alive_(metrics.registry().add_gauge(
          "hourglass_instances_alive",
          "hourglass instances on this schema whose heartbeat is recent enough that nobody takes "
          "over their claims (hourglass.instances)")),
      jobs_pending_(add_jobs_gauge(metrics.registry(), "pending")),
      jobs_enqueued_(add_jobs_gauge(metrics.registry(), "enqueued")),
      jobs_done_(add_jobs_gauge(metrics.registry(), "done")),
      jobs_cancelled_(add_jobs_gauge(metrics.registry(), "cancelled")),
      jobs_paused_(add_jobs_gauge(metrics.registry(), "paused")),
      sql_commands_waiting_(metrics.registry().add_gauge(
          "hourglass_sql_commands_waiting",
          "Commands in hourglass.commands the SQL intake has not taken yet (counted up to "
          "100,001).")),
      oldest_pending_lag_seconds_(metrics.registry().add_gauge(
          "hourglass_oldest_pending_lag_seconds",
          "How overdue the oldest overdue pending job is (0 if none), from the stats view.")) {
    store_options_.open_connections = nullptr;  // not a pipeline component: not in /readyz
    store_options_.background = true;
    thread_ = std::jthread([this](std::stop_token stop) {
        name_this_thread("hg-stats");
        refresh_until_stopped(stop);
    });
}

StatsRefresher::~StatsRefresher() = default;  // the jthread asks the loop to stop and joins it

std::optional<StatsRefresher::Reading> StatsRefresher::latest() const {
    const std::lock_guard lock(latest_mutex_);
    return latest_;
}

Milliseconds next_stats_refresh(Milliseconds interval, Milliseconds last_read) {
    return std::max(interval, last_read * kStatsReadShare);
}

StatsReadPace::Clock::time_point StatsReadPace::next_after(Clock::time_point started,
                                                           Clock::time_point ended) const {
    return ended + next_stats_refresh(interval_,
                                      std::chrono::duration_cast<Milliseconds>(ended - started));
}

void StatsReadPace::counts_read(Clock::time_point started, Clock::time_point ended) {
    next_counts_ = next_after(started, ended);
}

void StatsReadPace::lateness_read(Clock::time_point started, Clock::time_point ended) {
    next_lateness_ = next_after(started, ended);
}

Milliseconds StatsReadPace::wait(Clock::time_point now) const {
    if (now >= next_counts_) return Milliseconds{0};
    return std::chrono::ceil<Milliseconds>(next_counts_ - now);
}

void StatsRefresher::refresh_until_stopped(std::stop_token stop) {
    using Clock = StatsReadPace::Clock;
    std::unique_ptr<store::StatsStore> store;
    StatsReadPace pace(interval_);
    HourLateness lateness;
    std::optional<TimePoint> lateness_read_at;
    Milliseconds wait{0};
    do {
        try {
            if (!store) store = store::open_stats_store(store_options_);
            // First: /readyz needs only this, whatever the reads below cost.
            health_.set_migrations_current(store->migrations_current());
            auto started = Clock::now();
            store->fold_job_counts();
            auto stats = store->stats_counts();
            pace.counts_read(started, Clock::now());
            jobs_pending_.set(static_cast<double>(stats.pending));
            jobs_enqueued_.set(static_cast<double>(stats.enqueued));
            jobs_done_.set(static_cast<double>(stats.done));
            jobs_cancelled_.set(static_cast<double>(stats.cancelled));
            jobs_paused_.set(static_cast<double>(stats.paused));
            sql_commands_waiting_.set(static_cast<double>(stats.sql_commands_waiting));
            oldest_pending_lag_seconds_.set(static_cast<double>(stats.oldest_pending_lag_ms) / 1000.0);
            instances_alive_.set(static_cast<double>(store->live_instances(silent_for_)));
            stats.lateness = lateness;  // the last read, until the next one is due
            {
                const std::lock_guard lock(latest_mutex_);
                latest_ = Reading{stats, clock_->now_ms(), lateness_read_at};
            }
            if (pace.lateness_due(Clock::now())) {
                started = Clock::now();
                lateness = store->stats_lateness();
                pace.lateness_read(started, Clock::now());
                lateness_read_at = clock_->now_ms();
                const std::lock_guard lock(latest_mutex_);
                latest_->stats.lateness = lateness;
                latest_->lateness_read_at = lateness_read_at;
            }
            wait = pace.wait(Clock::now());
        } catch (const std::exception& error) {
            // The components log lost connections; this only says why the gauges are stale.
            spdlog::debug("metrics: cannot read the stats view: {}", error.what());
            store.reset();
            wait = interval_;  // a failed read is retried at the next interval
        }
    } while (sleep_unless_stopped(stop, wait));
}

}  // namespace hourglass::http
