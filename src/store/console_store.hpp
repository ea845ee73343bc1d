// The console's reads of PostgreSQL (reference §9), as plain rows: the console turns them into
// its JSON. Every query is served by an index and bounded by a limit its caller passes, so that
// each stays fast at 10 M jobs (measured by scripts/bench prune); a statement timeout of 5 s
// guards the rest. Control commands go through the path of ingest (JobStore::apply).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hourglass/command.hpp"
#include "hourglass/time.hpp"
#include "store/store_options.hpp"

namespace hourglass::store {

struct InstanceRow {
    std::string id;
    TimePoint started_at;
    TimePoint heartbeat_at;
    Milliseconds heartbeat_age{0};  // on the database's clock
};

// Jobs due in one slot of an upcoming chart: `slot` counts widths from its start (overdue: 0).
struct UpcomingSlot {
    std::int64_t slot = 0;
    std::int64_t pending = 0;   // not yet claimed
    std::int64_t enqueued = 0;  // handed over, not yet released
};

struct RejectionRow {
    TimePoint rejected_at;
    std::string job_id;
    std::string routing_key;
    std::string reason;
};

struct CronScheduleRow {
    std::string id;
    std::string routing_key;
    std::string cron;
    std::string cron_tz;
    TimePoint due_at;
    int runs = 0;
    std::optional<TimePoint> cron_until;
    std::optional<int> cron_limit;
    bool paused = false;
};

// One row of hourglass.jobs, as the console shows it.
struct JobRow {
    std::string id;
    std::string routing_key;
    std::string exchange;  // "" for none
    std::string state;
    int runs = 0;
    std::optional<std::string> cron;
    std::optional<std::string> cron_tz;
    std::optional<int> cron_limit;
    std::optional<int> released_run;
    std::optional<double> lateness_ms;
    std::optional<std::string> lease_owner;
    std::optional<TimePoint> due_at, cron_until, accepted_at, created_at, updated_at,
        enqueued_at, released_at, lease_until;
    std::string body;
    std::string properties;  // JSON text
    std::string owner;       // reference §3.5
};

class ConsoleStore {
public:
    virtual ~ConsoleStore() = default;

    // The registered instances, by id (100 at most).
    virtual std::vector<InstanceRow> instances() = 0;
    // Jobs due per `width` from `from` until `end`: the earliest `cap` claimable jobs and the
    // earliest `cap` runs handed over but not yet released; runs claimed this instant (in
    // flight for milliseconds) are left out.
    virtual std::vector<UpcomingSlot> upcoming(TimePoint from, Milliseconds width, TimePoint end,
                                               std::int64_t cap) = 0;
    // The lateness of the latest `count` releases, newest first.
    virtual std::vector<double> latest_lateness(std::size_t count) = 0;
    virtual std::vector<RejectionRow> latest_rejections(std::size_t count) = 0;
    // At most `count` schedules: live recurring jobs next due first, then the paused ones,
    // latest paused first (all of those that fit in `count`).
    virtual std::vector<CronScheduleRow> cron_schedules(std::size_t count) = 0;
    // The jobs a cancel by `prefix` would cancel now, counted up to `cap`.
    virtual std::size_t count_cancellable_by_prefix(const std::string& prefix, std::size_t cap) = 0;
    virtual std::optional<JobRow> job(const std::string& id) = 0;
    // Jobs whose routing key starts with `prefix`, in byte order, at most `count`.
    virtual std::vector<JobRow> search_routing_key(const std::string& prefix, std::size_t count) = 0;
    // Applies a control command (cancel, pause, resume, cancel by prefix) as ingest would.
    virtual CommandOutcome apply(Command command) = 0;
};

// Connects (throws when PostgreSQL is unreachable) with a statement timeout of 5 s.
std::unique_ptr<ConsoleStore> open_console_store(const StoreOptions& options);

}  // namespace hourglass::store
