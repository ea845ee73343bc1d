// Live leases and fencing (reference §6; docs/architecture.md "Fencing"), the instance's side.
// A heartbeat thread records in PostgreSQL that this instance is alive (about once a second)
// and reports each success here, with the instant it *sent* that beat: the database stamps a
// beat when it runs it, never before it was sent, so this instance never believes itself
// fresher than others see it. Others take over the claims of an instance silent for
// kTakeoverAfter (by the database's clock): they delete its registration and give its claims
// back in one transaction. So that two instances never both publish a claim:
//  - this instance publishes only while its last successful beat was sent less than
//    kPublishGrace ago (1 s before anyone may take over);
//  - a beat that finds its registration gone reports it (registration_lost): the loader drops
//    everything it holds before it registers, claims or publishes again.
//
// Pure and thread-safe; time is passed in, so the decisions are unit-tested without a database.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>

#include "hourglass/time.hpp"

namespace hourglass::loader {

inline constexpr Milliseconds kHeartbeatEvery{1000};
inline constexpr Milliseconds kPublishGrace{2000};
// An instance whose heartbeat has been silent this long is taken for dead (fenced); passed to
// every heartbeat (JobStore::heartbeat, forget_dead_instances.sql).
inline constexpr Milliseconds kTakeoverAfter{3000};
// A claim older than this that the loader does not hold is an orphan (a lost commit reply):
// longer than any claim takes from its commit to the schedule (forward_ladder_wait, 2 s).
inline constexpr Milliseconds kOrphanAge{5000};
inline constexpr Milliseconds kReconcileEvery{2000};

// The three durations above; unit tests of the loader shorten them.
struct LeaseTimings {
    Milliseconds heartbeat_every = kHeartbeatEvery;
    Milliseconds publish_grace = kPublishGrace;
    Milliseconds takeover_after = kTakeoverAfter;
    Milliseconds orphan_age = kOrphanAge;
    Milliseconds reconcile_every = kReconcileEvery;
};

class LeaseKeeper {
public:
    using Clock = std::chrono::steady_clock;

    explicit LeaseKeeper(LeaseTimings timings = {}) : timings_(timings) {}
    const LeaseTimings& timings() const noexcept { return timings_; }

    // A heartbeat sent at `sent` committed, its registration in place.
    void beat_succeeded(Clock::time_point sent) {
        std::lock_guard lock(mutex_);
        if (!last_success_ || sent > *last_success_) last_success_ = sent;
    }
    // A heartbeat found this instance's registration gone: others took its claims over.
    void registration_lost() {
        std::lock_guard lock(mutex_);
        claims_lost_ = true;
        last_success_.reset();
    }
    // Whether runs may be published now: a recent heartbeat, and no claims possibly taken over.
    bool may_publish(Clock::time_point now) const {
        std::lock_guard lock(mutex_);
        return last_success_ && now - *last_success_ < timings_.publish_grace && !claims_lost_;
    }
    // Whether the claims held in memory may belong to others now (see above).
    bool claims_lost() const {
        std::lock_guard lock(mutex_);
        return claims_lost_;
    }
    // The loader forgot them and gave back its own: it may register and publish again.
    void claims_forgotten() {
        std::lock_guard lock(mutex_);
        claims_lost_ = false;
    }

private:
    const LeaseTimings timings_;
    mutable std::mutex mutex_;
    std::optional<Clock::time_point> last_success_;
    bool claims_lost_ = false;
};

}  // namespace hourglass::loader
