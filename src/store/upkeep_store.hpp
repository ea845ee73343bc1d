// What the background upkeep needs from the store: the counts and lateness the stats refresher
// reads (reference §8 hourglass.stats), and the deletes of retention (reference §8
// "Retention"). store::JobStore implements both over PostgreSQL.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "hourglass/job.hpp"
#include "hourglass/time.hpp"
#include "store/leader_locks.hpp"
#include "store/store_options.hpp"

namespace hourglass::store {

// The newest rejections retention keeps whatever their age, so a flood of bad commands cannot
// grow the table without bound.
inline constexpr std::size_t kKeptRejections = 100000;

class StatsStore : public LeaderLockStore {
public:
    virtual ~StatsStore() = default;
    // Whether every migration this binary embeds is applied (readiness).
    virtual bool migrations_current() = 0;
    // Adds the counted changes of job states into the counts (migration 004).
    virtual void fold_job_counts() = 0;
    // The counts, oldest pending lag, next due time and the SQL intake's backlog.
    virtual Stats stats_counts() = 0;
    // The counts and the lateness of the last hour, in one read (`hourglass status`).
    virtual Stats stats() = 0;
    // The lateness percentiles of the last hour (reads every release of that hour).
    virtual HourLateness stats_lateness() = 0;
    // Instances whose heartbeat is younger than `silent_for`.
    virtual std::int64_t live_instances(Milliseconds silent_for) = 0;
};

class RetentionStore : public LeaderLockStore {
public:
    virtual ~RetentionStore() = default;
    // Deletes up to `limit` one-shot jobs ended longer than `retention` ago; nothing when another
    // instance prunes this schema now.
    virtual std::optional<std::size_t> prune_ended(Milliseconds retention, std::size_t limit) = 0;
    // Deletes up to `limit` rejections older than `retention` (none: only the count bounds them)
    // or beyond the newest `keep`.
    virtual std::size_t prune_rejections(std::optional<Milliseconds> retention, std::size_t keep,
                                         std::size_t limit) = 0;
    // Deletes up to `limit` receipts of the SQL intake written longer than `retention` ago.
    virtual std::size_t prune_receipts(Milliseconds retention, std::size_t limit) = 0;
    // The jobs prune_ended would delete with `retention` (`hourglass prune --dry-run`).
    virtual std::int64_t count_prunable(Milliseconds retention) = 0;
    // Bytes of hourglass.jobs with its indexes and TOAST.
    virtual std::int64_t table_bytes() = 0;
};

// Each opens a connection of its own (throws when PostgreSQL is out of reach).
std::unique_ptr<StatsStore> open_stats_store(const StoreOptions& options);
std::unique_ptr<RetentionStore> open_retention_store(const StoreOptions& options);

}  // namespace hourglass::store
