// The leader locks (migration 019): one row of hourglass.leader_locks per task that one instance
// does at a time (the SQL intake, retention). An instance leads a task for one transaction by
// locking its row FOR UPDATE SKIP LOCKED, and skips the task while another transaction holds
// it. A transaction that holds a row long (an operator's session of hourglass's role left open,
// a stuck client) therefore stops that task for every instance without an error: this finds
// who holds it, for `hourglass status` and for the warning LeaderLockWatch decides on.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hourglass/time.hpp"

namespace hourglass::store {

// A transaction of another session holding a row of leader_locks.
struct LeaderLockHolder {
    std::string lock;  // the row's name: sql_intake, prune
    std::string transaction_id;
    std::int64_t pid = 0;
    std::string role;
    std::string application;
    std::string state;  // pg_stat_activity.state: "idle in transaction", ...; "" when hidden
    // Since the transaction began, when this role may see it.
    std::optional<Milliseconds> open_for;
};

class LeaderLockStore {
public:
    virtual ~LeaderLockStore() = default;
    // Every transaction of another session holding a leader lock now.
    virtual std::vector<LeaderLockHolder> leader_lock_holders() = 0;
};

// "pid 123 (role app, application psql, idle in transaction, open 45 s)": what an operator
// needs to find the session and end it (pg_terminate_backend).
std::string describe(const LeaderLockHolder& holder);

// Decides when a task skipped because its leader lock is held elsewhere deserves a warning:
// when the same transaction has held it for `warn_after` (hourglass's own transactions hold it
// for one batch, then another takes it), and again every `repeat` while it goes on; and one
// line when the task gets its lock back after a warning. Pure: times come from the caller.
class LeaderLockWatch {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr Milliseconds kDefaultWarnAfter{30000};
    static constexpr Milliseconds kDefaultRepeat{300000};
    // How often log() reads the holders while the lock is held elsewhere: a second instance
    // finds the intake held at many attempts while the first takes, and one read a second is
    // enough to see the same transaction hold it for warn_after.
    static constexpr Milliseconds kHolderReadEvery{1000};

    // `lock` is the row's name, `task` what leads by it ("SQL intake"), `stopped` what does not
    // happen meanwhile ("no command is taken from hourglass.commands").
    LeaderLockWatch(std::string lock, std::string task, std::string stopped,
                    Milliseconds warn_after = kDefaultWarnAfter, Milliseconds repeat = kDefaultRepeat);

    // The task found its lock held elsewhere at `now`, and `holders` hold leader locks (any
    // lock; read after the attempt, so possibly empty). Returns a warning to log, if one is due.
    std::optional<std::string> held_elsewhere(const std::vector<LeaderLockHolder>& holders,
                                              Clock::time_point now);
    // The task took its lock at `now`. Returns a line to log if a warning was given.
    std::optional<std::string> taken(Clock::time_point now);

    // One attempt of the task at the lock at `now`: logs what the two above return, reading the
    // holders from `store` only when the lock was held elsewhere, at most every kHolderReadEvery.
    void log(bool held_elsewhere, LeaderLockStore& store, Clock::time_point now);

private:
    std::string lock_;
    std::string task_;
    std::string stopped_;
    Milliseconds warn_after_;
    Milliseconds repeat_;
    // The transaction seen holding the lock, since when, and when it was last warned about.
    std::optional<std::string> holder_;
    Clock::time_point held_since_{};
    std::optional<Clock::time_point> warned_at_;
    std::optional<Clock::time_point> holders_read_at_;
};

}  // namespace hourglass::store
