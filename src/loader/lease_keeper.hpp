// Live leases (reference §6), the instance's side. A heartbeat thread records in PostgreSQL that
// this instance is alive (about once a second) and reports each success here. Other instances take
// over the claims of an instance silent for kTakeoverAfter (by the database's clock). So that
// two instances never both publish a claim, this instance publishes only while its last
// successful heartbeat is younger than kPublishGrace (< kTakeoverAfter, with room for a round
// trip); and when a heartbeat succeeds after a silence of kTakeoverAfter or more, its claims may
// have been taken over: the loader forgets what it holds in memory and gives back what is
// still its own before it publishes again.
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
// Also written in the claim statement (src/store/job_store.cpp, "interval '3 seconds'").
inline constexpr Milliseconds kTakeoverAfter{3000};

// The three durations above; unit tests of the loader shorten them.
struct LeaseTimings {
    Milliseconds heartbeat_every = kHeartbeatEvery;
    Milliseconds publish_grace = kPublishGrace;
    Milliseconds takeover_after = kTakeoverAfter;
};

class LeaseKeeper {
public:
    using Clock = std::chrono::steady_clock;

    explicit LeaseKeeper(LeaseTimings timings = {}) : timings_(timings) {}
    const LeaseTimings& timings() const noexcept { return timings_; }

    // A heartbeat committed at `now`.
    void beat_succeeded(Clock::time_point now) {
        std::lock_guard lock(mutex_);
        if (last_success_ && now - *last_success_ >= timings_.takeover_after) claims_lost_ = true;
        last_success_ = now;
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
    // The loader forgot them and gave back its own: publishing may resume.
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
