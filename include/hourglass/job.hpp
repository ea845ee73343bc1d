// A job as the loader and audit see it (reference §6): one run of a job, handed to the delay
// topology, and the release observed afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "hourglass/command.hpp"
#include "hourglass/message.hpp"
#include "hourglass/time.hpp"

namespace hourglass {

// One run claimed by a loader: everything needed to publish it.
struct ClaimedRun {
    std::string id;
    std::string routing_key;
    std::string exchange;  // empty: the output exchange
    std::string body;
    BasicProperties properties;
    TimePoint due_at;
    int run = 1;                   // the run number this release carries (x-hourglass-run)
    std::optional<CronSpec> cron;  // set for recurring jobs
    bool resent = false;           // handed over before, never observed: published again
    // Runs already handed over are observed with this run (a release group whose last run was
    // given back): its release must be copied to the audit itself, never observed with another.
    bool observe_itself = false;
    std::optional<Milliseconds> expires_after;  // x-hourglass-expires-after
};

// Claims at insert (reference §6.2): room the loader offers ingest for one batch. Ingest leases
// the plain one-shot schedules it inserts due by `horizon_end` (no target exchange), up to
// `runs` of them and `bytes` of their bodies and properties, to the loader as it inserts them,
// and hands them over after the commit: they skip the claim, a write per job. `epoch` tells the
// loader whether it forgot its claims since (PostgreSQL out of reach) and must give them back.
struct InsertClaimOffer {
    std::string owner;  // the lease owner, the loader's
    Milliseconds lease{0};
    TimePoint horizon_end;
    std::size_t runs = 0;
    std::size_t bytes = 0;
    std::uint64_t epoch = 0;
    TimePoint made_at;  // on the one clock: no run leased under it was leased before
};

// One run of one job.
struct RunRef {
    std::string id;
    int run = 1;
    bool operator==(const RunRef&) const = default;
};

// What a run of a recurring job leaves behind once handed over (reference §5), computed by cron
// when the run is claimed. A run is *missed* when a later run of its job is already due as it
// is handed over (hourglass was down, the job paused): x-cron-catchup says what it becomes.
struct AfterHandover {
    std::optional<TimePoint> next_due;  // the next run; empty: none (one-shot, or the last run)
    // Missed and released: the number of missed runs it stands for (itself and those coalesced
    // into it), its x-hourglass-catchup header. 0: not missed.
    std::size_t catchup = 0;
    // Missed, with x-cron-catchup: skip: sent to <prefix>.expired, not released.
    bool skip = false;
};

// A run the broker confirmed: the loader records it (and, for cron, the next due time).
struct HandedOverRun {
    std::string id;
    int run = 1;
    std::optional<TimePoint> next_due;  // recurring jobs: the next run; empty: the last run
    // false: nothing will observe its release (--no-audit), so it is never re-sent as lost.
    bool audited = true;
    // Set when its release is observed through another run's: the last run of its release
    // group (same delay queue, same due time), which left the queue after it.
    std::optional<RunRef> observed_with;
    // When it was published (the one clock): its enqueued_at, never after its release. Empty:
    // the time of the record.
    std::optional<TimePoint> handed_at = std::nullopt;
    // Sent to <prefix>.expired instead of being released (x-hourglass-expires-after).
    bool expired = false;
};

// A release observed by the audit consumer.
struct ObservedRelease {
    std::string id;
    int run = 1;
    TimePoint due;
    std::chrono::sys_time<std::chrono::microseconds> released_at;
};

// The lateness of the releases observed in the last hour (hourglass.stats_lateness); empty
// when there were none.
struct HourLateness {
    std::optional<double> p50_ms;
    std::optional<double> p99_ms;
    std::optional<double> max_ms;
};

// The hourglass.stats view (reference §8): the counts of hourglass.stats_counts and the
// lateness of hourglass.stats_lateness.
inline constexpr std::int64_t kSqlCommandsCountCap = 100000;

struct Stats {
    std::int64_t pending = 0;
    std::int64_t enqueued = 0;
    std::int64_t done = 0;
    std::int64_t cancelled = 0;
    std::int64_t paused = 0;  // recurring jobs paused (x-pause)
    // Commands applications inserted into hourglass.commands that the SQL intake has not taken
    // yet, counted up to kSqlCommandsCountCap + 1.
    std::int64_t sql_commands_waiting = 0;
    std::int64_t oldest_pending_lag_ms = 0;
    std::optional<TimePoint> next_due_at;
    HourLateness lateness;
};

}  // namespace hourglass
