// PostgreSQL as the loader's stages see it, for unit tests: FakeDatabase holds hourglass.jobs
// and the registrations, shared by every "connection" (FakeStore) a stage opens; a test makes
// it unreachable, fails its heartbeats, locks rows or holds claims back, and reads what each
// statement did. Its claims follow the store's rules (claim_due.sql, record_handed_over.sql,
// release_orphaned_claims.sql) as far as the loader can tell them apart.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "hourglass/job.hpp"
#include "hourglass/message.hpp"
#include "store/claim_store.hpp"

namespace hourglass::testing {

// hourglass.jobs as the loader sees it, shared by every "connection" the loader opens.
struct FakeDatabase {
    // The monotonic clock claims are stamped on (orphan ages); a test may set a manual one.
    std::function<std::chrono::steady_clock::time_point()> steady_now = [] {
        return std::chrono::steady_clock::now();
    };
    struct Row {
        ClaimedRun run;
        std::string owner;  // empty: pending, claimable
        bool handed_over = false;
        bool audited = false;  // as the last hand-over recorded it
        std::optional<RunRef> observed_with;  // as the last hand-over recorded it
        std::optional<TimePoint> next_due;    // as the last hand-over recorded it (recurring)
        std::chrono::steady_clock::time_point claimed_at{};  // when `owner` leased it
    };
    mutable std::mutex mutex;
    std::map<std::string, Row> rows;
    bool reachable = true;  // false: every call fails as a lost connection would
    bool heartbeats_fail = false;  // only heartbeats fail (their connection is the one lost)
    // Runs inside each heartbeat, as PostgreSQL runs the statement (a test makes one slow).
    std::function<void()> during_heartbeat;
    // PostgreSQL's clock minus the host's, as measure_clock_offset() finds it.
    std::chrono::microseconds clock_offset{0};
    int heartbeats = 0;
    int claims = 0;   // claim_due calls (each a query in PostgreSQL)
    // The last claim's resend_due_before: runs handed over before it, not audited, count as lost.
    std::optional<TimePoint> last_resend_due_before;
    // Set: claims past this many wait until open_claims(), as a slow claim query would.
    std::optional<int> claims_allowed;
    std::condition_variable claims_opened;
    int records = 0;  // record_handed_over calls with runs to record (each an UPDATE)
    int release_all_calls = 0;
    int leaves = 0;
    std::set<std::string> registered;  // instances (live leases)
    std::set<std::string> fenced;      // taken for dead, until they register again
    std::vector<std::string> released;  // ids given back one by one (release_claims)
    std::vector<std::string> orphans_released;  // ids given back as orphans (heartbeat)
    std::vector<std::string> set_aside;         // ids cancelled as unpublishable, with reasons
    std::vector<std::string> set_aside_reasons;
    std::set<std::string> locked;       // rows another transaction holds: records leave them

    void add(const std::string& id, TimePoint due) {
        ClaimedRun run;
        run.id = id;
        run.routing_key = "rk." + id;
        run.body = "body of " + id;
        run.due_at = due;
        add(std::move(run));
    }
    // A run with a target exchange (x-hourglass-exchange): published into the forward ladder.
    void add_targeted(const std::string& id, TimePoint due) {
        ClaimedRun run;
        run.id = id;
        run.routing_key = "rk";
        run.exchange = "user.exchange";
        run.due_at = due;
        add(std::move(run));
    }
    void add(ClaimedRun run, const std::string& owner = "") {
        std::lock_guard lock(mutex);
        rows[run.id] = Row{run, owner, false, false, std::nullopt, std::nullopt, steady_now()};
    }
    // Another instance takes `owner` for dead: fences it (its registration gone) and gives its
    // claims back.
    void take_over(const std::string& owner) {
        std::lock_guard lock(mutex);
        registered.erase(owner);
        fenced.insert(owner);
        for (auto& [id, row] : rows) {
            if (row.owner == owner) row.owner.clear();
        }
    }
    // Another instance fences `owner` while a session of it is still open: its registration
    // goes, its claims stay its own (release_claims_of_fenced_owners.sql).
    void fence(const std::string& owner) {
        std::lock_guard lock(mutex);
        registered.erase(owner);
        fenced.insert(owner);
    }
    void open_claims() {
        {
            std::lock_guard lock(mutex);
            claims_allowed.reset();
        }
        claims_opened.notify_all();
    }
    void set_reachable(bool value) {
        std::lock_guard lock(mutex);
        reachable = value;
    }
    void check_reachable() const {
        if (!reachable) throw std::runtime_error("fake database: connection lost");
    }
    std::size_t handed_over() const {
        std::lock_guard lock(mutex);
        return static_cast<std::size_t>(std::count_if(
            rows.begin(), rows.end(), [](const auto& row) { return row.second.handed_over; }));
    }
    bool claimed(const std::string& id) const {
        std::lock_guard lock(mutex);
        return !rows.at(id).owner.empty();
    }
    template <typename Read>
    auto read(Read read_fields) const {
        std::lock_guard lock(mutex);
        return read_fields(*this);
    }
    template <typename Change>
    auto read(Change change) {
        std::lock_guard lock(mutex);
        return change(*this);
    }
};

class FakeStore final : public store::ClaimStore {
public:
    explicit FakeStore(FakeDatabase& db) : db_(db) {
        std::lock_guard lock(db_.mutex);
        db_.check_reachable();
    }
    // Like JobStore::claim_due: within the limit of runs and bytes, the first run always.
    store::Claim claim_due(const std::string& owner, TimePoint horizon_end, store::ClaimLimit limit,
                           Milliseconds, std::optional<TimePoint> resend_due_before) override {
        std::unique_lock lock(db_.mutex);
        db_.claims_opened.wait(lock, [&] { return !db_.claims_allowed || db_.claims < *db_.claims_allowed; });
        db_.check_reachable();
        ++db_.claims;
        db_.last_resend_due_before = resend_due_before;
        store::Claim claim;
        if (db_.fenced.contains(owner)) return claim;  // a fenced claimer takes nothing (claim_due.sql)
        std::size_t bytes = 0;
        for (auto& [id, row] : db_.rows) {
            if (!row.owner.empty() || row.handed_over || row.run.due_at > horizon_end) continue;
            if (claim.runs.size() == limit.runs || bytes >= limit.bytes) {
                claim.at_limit = true;
                break;
            }
            row.owner = owner;
            row.claimed_at = db_.steady_now();
            bytes += row.run.body.size() + encoded_size(row.run.properties);
            claim.runs.push_back(row.run);
        }
        return claim;
    }
    std::vector<HandedOverRun> record_handed_over(const std::string& owner,
                                                  const std::vector<HandedOverRun>& runs) override {
        std::lock_guard lock(db_.mutex);
        db_.check_reachable();
        if (!runs.empty()) ++db_.records;
        std::vector<HandedOverRun> left;
        for (const auto& run : runs) {
            const auto& observed = run.observed_with ? run.observed_with->id : run.id;
            if (db_.locked.contains(run.id) || db_.locked.contains(observed)) {
                left.push_back(run);
                continue;
            }
            auto& row = db_.rows.at(run.id);
            if (row.owner == owner) {
                row.handed_over = true;
                row.audited = run.audited;
                row.observed_with = run.observed_with;
                row.next_due = run.next_due;
                row.owner.clear();
            }
        }
        return left;
    }
    std::vector<std::string> release_claims(const std::string& owner,
                                            const std::vector<std::string>& ids) override {
        std::lock_guard lock(db_.mutex);
        db_.check_reachable();
        std::vector<std::string> left;
        for (const auto& id : ids) {
            if (db_.locked.contains(id)) {
                left.push_back(id);
                continue;
            }
            auto& row = db_.rows.at(id);
            if (row.owner == owner) row.owner.clear();
            db_.released.push_back(id);
        }
        return left;
    }
    void register_instance(const std::string& owner) override {
        std::lock_guard lock(db_.mutex);
        db_.check_reachable();
        db_.registered.insert(owner);
        db_.fenced.erase(owner);
    }
    Heartbeat heartbeat(const std::string& owner, Milliseconds, Milliseconds) override {
        std::lock_guard lock(db_.mutex);
        db_.check_reachable();
        if (db_.heartbeats_fail) throw std::runtime_error("fake database: heartbeat lost");
        ++db_.heartbeats;
        if (db_.during_heartbeat) db_.during_heartbeat();
        return {.registered = db_.registered.contains(owner), .dead = {}};
    }
    std::vector<std::string> claims_older_than(const std::string& owner, Milliseconds,
                                               Milliseconds age) override {
        std::lock_guard lock(db_.mutex);
        db_.check_reachable();
        std::vector<std::string> ids;
        for (const auto& [id, row] : db_.rows) {
            if (is_old_claim(row, owner, age)) ids.push_back(id);
        }
        return ids;
    }
    std::size_t release_orphaned_claims(const std::string& owner, const std::vector<std::string>& ids,
                                        Milliseconds, Milliseconds age) override {
        std::lock_guard lock(db_.mutex);
        db_.check_reachable();
        std::size_t released = 0;
        for (const auto& id : ids) {
            auto& row = db_.rows.at(id);
            // Rows another transaction holds are passed by (SKIP LOCKED), as in the store.
            if (!is_old_claim(row, owner, age) || db_.locked.contains(id)) continue;
            row.owner.clear();
            db_.orphans_released.push_back(id);
            ++released;
        }
        return released;
    }
    ClockOffset measure_clock_offset() override {
        std::lock_guard lock(db_.mutex);
        db_.check_reachable();
        return {db_.clock_offset, std::chrono::microseconds{0}};
    }
    void release_all_claims(const std::string& owner) override {
        std::lock_guard lock(db_.mutex);
        db_.check_reachable();
        ++db_.release_all_calls;
        for (auto& [id, row] : db_.rows) {
            if (row.owner == owner) row.owner.clear();
        }
    }
    void set_aside(const std::string& owner, const std::vector<SetAsideRun>& runs) override {
        std::lock_guard lock(db_.mutex);
        db_.check_reachable();
        for (const auto& run : runs) {
            auto& row = db_.rows.at(run.id);
            if (row.owner != owner) continue;
            row.owner.clear();
            row.handed_over = true;  // cancelled: never claimed again
            db_.set_aside.push_back(run.id);
            db_.set_aside_reasons.push_back(run.reason);
        }
    }
    void leave(const std::string&) override {
        std::lock_guard lock(db_.mutex);
        ++db_.leaves;
    }

private:
    bool is_old_claim(const FakeDatabase::Row& row, const std::string& owner, Milliseconds age) const {
        return row.owner == owner && !row.handed_over && row.claimed_at < db_.steady_now() - age;
    }
    FakeDatabase& db_;
};


}  // namespace hourglass::testing
