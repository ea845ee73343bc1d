// Commands applied to hourglass.jobs (reference §3.2): schedule, cancel, pause and resume,
// cancel by prefix; what ingest and the SQL intake share (apply_in.hpp).
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include <set>
#include <unordered_map>

#include "common/text.hpp"
#include "store/apply_in.hpp"
#include "store/job_rows.hpp"
#include "store/job_store.hpp"
#include "store/row_locks.hpp"

namespace hourglass::store {

using nlohmann::json;

namespace {

// With --command-scope owner, a command that meets a job of another owner acts on nothing and
// learns nothing of it but that its id is taken (reference §3.5).
bool belongs_to_another(const Command& command, const std::string& job_owner) {
    return command.owner_only && job_owner != command.owner;
}

CommandOutcome another_owners_job(const std::string& id) {
    return {CommandStatus::rejected, std::nullopt,
            "job " + quote_value(id, 64) + " belongs to another owner (--command-scope owner)"};
}

// lock_job's row: state, leased, recurring, due (ms), owner.
struct LockedJob {
    std::string state;
    bool leased = false;
    bool recurring = false;
    TimePoint due;
    std::string owner;
};

std::optional<LockedJob> lock_job(pqxx::work& tx, const std::string& id) {
    const auto rows = tx.exec_prepared("lock_job", id);
    if (rows.empty()) return std::nullopt;
    return LockedJob{rows[0][0].as<std::string>(), rows[0][1].as<bool>(), rows[0][2].as<bool>(),
                     time_of(rows[0][3]), rows[0][4].as<std::string>()};
}

CommandOutcome schedule_one(pqxx::work& tx, const Command& command, const ScheduleCommand& job) {
    const json rows = json::array({job_row(job, command.owner)});
    const auto existing = lock_job(tx, job.id);
    if (!existing) {
        tx.exec_prepared("insert_jobs", rows.dump(), std::optional<std::string>{}, 0);
        return {CommandStatus::scheduled, job.due_at, {}, false};
    }
    if (belongs_to_another(command, existing->owner)) return another_owners_job(job.id);
    const auto& state = existing->state;
    const bool leased = existing->leased;
    const auto current_due = existing->due;
    if (!job.replace) return {CommandStatus::duplicate, current_due, {}};
    // reference §3.1: a run due within the horizon belongs to the delay topology.
    if (state == "enqueued" || (state == "pending" && leased)) {
        return {CommandStatus::too_late, current_due, {}};
    }
    tx.exec_prepared("replace_job", rows.dump());
    return {CommandStatus::replaced, job.due_at, {}};
}

CommandOutcome cancel_one(pqxx::work& tx, const Command& command, const CancelCommand& cancel) {
    const auto existing = lock_job(tx, cancel.id);
    if (!existing) return {CommandStatus::not_found, std::nullopt, {}};
    if (belongs_to_another(command, existing->owner)) return another_owners_job(cancel.id);
    const auto& [state, leased, recurring, due, owner] = *existing;
    if (state == "cancelled") return {CommandStatus::cancelled, due, {}};
    if ((state == "pending" && !leased) || state == "paused") {
        tx.exec_prepared("cancel_job", cancel.id);
        return {CommandStatus::cancelled, due, {}};
    }
    // A recurring job stops for good, even with a run in flight, which is still released
    // (reference §3.2). Its last run already handed over (enqueued) or done: too late.
    if (recurring && state == "pending") {
        tx.exec_prepared("cancel_job", cancel.id);
        return {CommandStatus::cancelled, due, {}};
    }
    return {CommandStatus::too_late, due, {}};
}

// Pause and resume (reference §3.3): only a recurring job that has not ended.
CommandOutcome pause_one(pqxx::work& tx, const Command& issued, const PauseCommand& command) {
    const auto existing = lock_job(tx, command.id);
    if (!existing) return {CommandStatus::not_found, std::nullopt, {}};
    if (belongs_to_another(issued, existing->owner)) return another_owners_job(command.id);
    const auto& [state, leased, recurring, due, owner] = *existing;
    const auto done = command.pause ? CommandStatus::paused : CommandStatus::resumed;
    if (!recurring) {
        return {CommandStatus::rejected, due,
                std::string(command.pause ? "x-pause" : "x-resume") + ": job " +
                    quote_value(command.id, 64) + " is not recurring (only x-cron jobs pause)"};
    }
    if (state == "cancelled" || state == "done" || state == "enqueued") {
        return {CommandStatus::too_late, due, {}};
    }
    // A run already claimed (within the horizon) is still released, as with a cancel; the
    // job pauses after it. Resumed, the run at due_at (past, if runs were missed meanwhile)
    // is claimed as any other, and x-cron-catchup decides what the missed runs become.
    if (command.pause && state == "pending") tx.exec_prepared("pause_job", command.id);
    if (!command.pause && state == "paused") tx.exec_prepared("resume_job", command.id);
    return {done, due, {}};
}

// Cancels in batches (kCancelPrefixBatch rows read per statement, so a statement's time and
// locks stay bounded however many jobs share the prefix), all in the batch's transaction: the
// receipt's count is exact and a redelivered command cancels nothing twice.
CommandOutcome cancel_prefix(pqxx::work& tx, const Command& issued,
                             const CancelPrefixCommand& command) {
    const auto owner = issued.owner_only ? std::optional(issued.owner) : std::nullopt;
    const auto upper = prefix_upper_bound(command.prefix);
    std::string after_key = command.prefix;
    std::string after_id;  // ids are never empty: ("prefix", "") precedes every job of the key
    std::int64_t cancelled = 0;
    while (true) {
        const auto row = tx.exec_prepared1("cancel_prefix_batch", command.prefix, after_key,
                                           after_id, static_cast<long>(kCancelPrefixBatch), upper,
                                           owner);
        cancelled += row[0].as<std::int64_t>();
        if (row[1].as<std::size_t>() < kCancelPrefixBatch) break;
        after_key = row[2].as<std::string>();
        after_id = row[3].as<std::string>();
    }
    return {CommandStatus::cancelled, std::nullopt, {}, false, cancelled};
}

// Plain schedules whose id occurs once in the batch go in one INSERT; the database says which
// ids already existed (duplicates).
// Those marked claim_at_insert are leased to the loader of `claims`, if any.
void insert_in_bulk(pqxx::work& tx, std::span<const Command> commands,
                    const std::vector<std::size_t>& indices, std::vector<CommandOutcome>& outcomes,
                    const InsertClaimOffer* claims) {
    json rows = json::array();
    for (const auto i : indices) {
        const auto& job = std::get<ScheduleCommand>(commands[i].action);
        auto row = job_row(job, commands[i].owner);
        if (claims && job.claim_at_insert) row["leased"] = true;
        rows.push_back(std::move(row));
    }
    const std::optional<std::string> owner =
        claims ? std::optional(claims->owner) : std::nullopt;
    const auto lease_ms = claims ? claims->lease.count() : 0;
    std::unordered_map<std::string, bool> inserted;  // id -> leased
    for (const auto& row : tx.exec_prepared("insert_jobs", rows.dump(), owner, lease_ms)) {
        inserted.emplace(row[0].as<std::string>(), row[1].as<bool>());
    }
    json duplicate_ids = json::array();
    for (const auto i : indices) {
        const auto& job = std::get<ScheduleCommand>(commands[i].action);
        if (const auto found = inserted.find(job.id); found != inserted.end()) {
            outcomes[i] = {CommandStatus::scheduled, job.due_at, {}, found->second};
        } else {
            duplicate_ids.push_back(job.id);
        }
    }
    if (duplicate_ids.empty()) return;
    std::unordered_map<std::string, std::pair<TimePoint, std::string>> existing;  // due, owner
    for (const auto& row : tx.exec_prepared("due_of_ids", duplicate_ids.dump())) {
        existing.emplace(row[0].as<std::string>(),
                         std::pair{time_of(row[1]), row[2].as<std::string>()});
    }
    for (const auto i : indices) {
        const auto& job = std::get<ScheduleCommand>(commands[i].action);
        if (inserted.contains(job.id)) continue;
        const auto found = existing.find(job.id);
        if (found != existing.end() && belongs_to_another(commands[i], found->second.second)) {
            outcomes[i] = another_owners_job(job.id);
            continue;
        }
        outcomes[i] = {CommandStatus::duplicate,
                       found == existing.end() ? std::nullopt : std::optional(found->second.first),
                       {}};
    }
}

}  // namespace

std::vector<CommandOutcome> apply_in(pqxx::work& tx, std::span<const Command> commands,
                                     const InsertClaimOffer* claims) {
    std::vector<CommandOutcome> outcomes(commands.size());
    std::unordered_map<std::string, int> occurrences;
    for (const auto& command : commands) {
        if (!std::holds_alternative<Rejection>(command.action)) ++occurrences[command.id];
    }
    std::vector<std::size_t> bulk;
    for (std::size_t i = 0; i < commands.size(); ++i) {
        const auto* job = std::get_if<ScheduleCommand>(&commands[i].action);
        if (job && !job->replace && occurrences[job->id] == 1) bulk.push_back(i);
    }

    // A job's row locked by another transaction (an operator's, left open) must not hold up
    // every command behind it: past this wait the batch fails as busy (store/errors.hpp) and
    // ingest applies the others while that command waits. The loader's and the audit's own
    // row locks last a statement: a command that meets a long one only waits a little longer.
    tx.exec(kBriefRowLockWait);
    if (!bulk.empty()) insert_in_bulk(tx, commands, bulk, outcomes, claims);
    for (std::size_t i = 0, next_bulk = 0; i < commands.size(); ++i) {
        if (next_bulk < bulk.size() && bulk[next_bulk] == i) {
            ++next_bulk;
            continue;
        }
        std::visit(
            [&](const auto& action) {
                using T = std::decay_t<decltype(action)>;
                if constexpr (std::is_same_v<T, ScheduleCommand>) {
                    outcomes[i] = schedule_one(tx, commands[i], action);
                } else if constexpr (std::is_same_v<T, CancelCommand>) {
                    outcomes[i] = cancel_one(tx, commands[i], action);
                } else if constexpr (std::is_same_v<T, PauseCommand>) {
                    outcomes[i] = pause_one(tx, commands[i], action);
                } else if constexpr (std::is_same_v<T, CancelPrefixCommand>) {
                    outcomes[i] = cancel_prefix(tx, commands[i], action);
                } else {
                    outcomes[i] = {CommandStatus::rejected, std::nullopt, action.error};
                }
            },
            commands[i].action);
    }
    return outcomes;
}

std::vector<CommandOutcome> JobStore::apply(std::span<const Command> commands,
                                            const InsertClaimOffer* claims) {
    pqxx::work tx(*connection_);
    auto outcomes = apply_in(tx, commands, claims);
    tx.commit();
    return outcomes;
}

}  // namespace hourglass::store
