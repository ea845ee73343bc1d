// JobStore: every read and write of hourglass.jobs (reference §8), over one PostgreSQL connection.
//
// One JobStore per thread. Statements are prepared once per connection and take parameters
// only (never user text spliced into SQL); many rows travel as one JSON parameter. A lost
// connection surfaces as pqxx::broken_connection; the caller reconnects by building a new
// JobStore. A commit whose outcome is unknown (pqxx::in_doubt_error) is never retried: the
// commands stay unacked, are redelivered, and job ids make that harmless.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hourglass/command.hpp"
#include "hourglass/job.hpp"
#include "common/metrics.hpp"
#include "store/claim_store.hpp"
#include "store/command_store.hpp"
#include "store/release_store.hpp"
#include "store/sql_command_store.hpp"
#include "store/store_options.hpp"
#include "store/upkeep_store.hpp"

#include <pqxx/connection>

namespace hourglass::store {

class CommandsInserted;


inline constexpr std::size_t kMaxRejectionReasonBytes = 1000;

class JobStore final : public ClaimStore,
                       public CommandStore,
                       public ReleaseStore,
                       public SqlCommandStore,
                       public StatsStore,
                       public RetentionStore {
public:
    explicit JobStore(const StoreOptions& options);
    ~JobStore();
    JobStore(const JobStore&) = delete;
    JobStore& operator=(const JobStore&) = delete;

    // Applies commands in order in one transaction; outcome i belongs to command i.
    // Rejections are passed through (outcome `rejected`) without touching the database.
    // Claims at insert (see CommandStore) take the multi-row insert of plain schedules only.
    std::vector<CommandOutcome> apply(std::span<const Command> commands,
                                      const InsertClaimOffer* claims) override;
    std::vector<CommandOutcome> apply(std::span<const Command> commands) {
        return apply(commands, nullptr);
    }

    // The SQL intake (SqlCommandStore; sql_commands.cpp).
    SqlCommandBatch take_sql_commands(
        const SqlCommandLimits& limits,
        const std::function<Command(const SqlCommandRow&)>& parse) override;
    bool wait_for_commands(Milliseconds timeout) override;

    // Claims pending runs due at or before `horizon_end` (and runs whose lease held by another
    // owner expired), earliest first and within `limit` (runs, and bytes of their bodies and
    // stored properties), leasing them to `owner` for `lease`. Safe with
    // concurrent loaders. An owner never takes back its own expired lease: the run may still
    // be in its memory, and a restarted process has a new owner id.
    // With `resend_due_before`, also claims one-shot runs already handed over (`enqueued`) but
    // never observed, due and last handed over before it, to publish the same run again: the
    // broker lost them.
    Claim claim_due(const std::string& owner, TimePoint horizon_end, ClaimLimit limit,
                    Milliseconds lease, std::optional<TimePoint> resend_due_before) override;
    std::vector<ClaimedRun> claim_due(const std::string& owner, TimePoint horizon_end,
                                      std::size_t limit, Milliseconds lease) {
        return claim_due(owner, horizon_end, ClaimLimit{.runs = limit}, lease, std::nullopt).runs;
    }
    // Records runs the broker confirmed; only runs still leased to `owner` are changed. Runs
    // whose rows another transaction holds are returned, not waited for (an operator's open
    // UPDATE would otherwise stop every record behind them).
    std::vector<HandedOverRun> record_handed_over(const std::string& owner,
                                                  const std::vector<HandedOverRun>& runs) override;
    // Gives back claimed runs that were not published (shutdown), so others take them at once.
    std::vector<std::string> release_claims(const std::string& owner,
                                            const std::vector<std::string>& ids) override;
    // Live leases (reference §6, migrations 007 and 019). Records that `owner` is alive, fences
    // instances that have not beaten for `takeover_after` and gives their claims back (so that
    // any instance claims them at once); returns the instances found dead.
    void register_instance(const std::string& owner) override;
    Heartbeat heartbeat(const std::string& owner, Milliseconds takeover_after,
                        Milliseconds fresh_within) override;
    std::vector<std::string> claims_older_than(const std::string& owner, Milliseconds lease,
                                               Milliseconds age) override;
    std::size_t release_orphaned_claims(const std::string& owner, const std::vector<std::string>& ids,
                                        Milliseconds lease, Milliseconds age) override;
    // PostgreSQL's clock minus this host's system clock, rounded down by up to a round trip
    // (so that correcting by it never makes this host's clock run ahead of PostgreSQL's).
    ClockOffset measure_clock_offset() override;
    // Gives back every claim `owner` still holds (after it may have been declared dead).
    void release_all_claims(const std::string& owner) override;
    // Unregisters `owner` (a clean stop).
    void leave(const std::string& owner) override;
    void set_aside(const std::string& owner, const std::vector<SetAsideRun>& runs) override;
    // A setting of this store's session as PostgreSQL shows it (current_setting), e.g.
    // "2s" for lock_timeout: the bounds connect() sets.
    std::string session_setting(const std::string& name);
    // Records releases seen by the audit consumer (see ReleaseStore); releases of unknown jobs
    // are skipped, those whose rows another transaction holds are parked.
    RecordedReleases record_releases(const std::vector<ObservedRelease>& releases) override;
    RecordedParked record_parked_releases() override;

    // The whole stats view, in one snapshot (`hourglass status`).
    Stats stats();
    // Its two parts (migration 014), for a reader that refreshes them at paces of their own:
    // the counts (milliseconds at any size; `lateness` left empty) and the lateness of the
    // last hour (it reads every release of that hour).
    Stats stats_counts() override;
    HourLateness stats_lateness() override;
    // Instances that beat within `silent_for` (those another instance would not take over).
    std::int64_t live_instances(Milliseconds silent_for) override;
    // Adds the per-statement changes of jobs per state into the totals the stats view reads
    // (migration 004), so that the view never has many to add up. Cheap; any instance may.
    void fold_job_counts() override;
    bool migrations_current() override;
    // Retention (reference §8): deletes at most `limit` one-shot jobs that ended (done or
    // cancelled) more than `retention` ago by the database's clock, oldest first, skipping rows
    // others hold. One pruner per schema at a time: nullopt when another session holds the pruning
    // lock. A batch is bounded in time (statement_timeout).
    std::optional<std::size_t> prune_ended(Milliseconds retention, std::size_t limit) override;
    // Records rejected commands for the console.
    void record_rejections(const std::vector<RecordedRejection>& rejections) override;
    // Deletes at most `limit` of the oldest rejections that are older than `retention` (none
    // when nullopt) or beyond the newest `keep`; returns how many went.
    std::size_t prune_rejections(std::optional<Milliseconds> retention, std::size_t keep,
                                 std::size_t limit) override;
    std::size_t prune_receipts(Milliseconds retention, std::size_t limit) override;
    // How many rows prune_ended would delete now (hourglass prune --dry-run).
    std::int64_t count_prunable(Milliseconds retention);
    // Bytes of hourglass.jobs with its indexes and TOAST.
    std::int64_t table_bytes() override;

    // Who holds the leader locks (LeaderLockStore, for the SQL intake, retention and status).
    std::vector<LeaderLockHolder> leader_lock_holders() override;
    // Earliest due time of claimable pending jobs, to sleep until it enters the horizon.
    std::optional<TimePoint> next_claimable_due();

    pqxx::connection& connection() noexcept { return *connection_; }

private:
    std::unique_ptr<pqxx::connection> connection_;
    metrics::ScopedGaugeIncrement counted_open_;
    std::string schema_;
    // LISTENs once the SQL intake first waits (wait_for_commands).
    std::unique_ptr<CommandsInserted> commands_inserted_;
};

// Connects, sets search_path to the schema; throws pqxx::broken_connection when unreachable.
std::unique_ptr<pqxx::connection> connect(const StoreOptions& options);

}  // namespace hourglass::store
