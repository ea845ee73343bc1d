// What reaches the claimer from the other threads: runs to give back to the store, and the
// doorbell that wakes it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <iterator>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace hourglass::loader {

// Claimed runs to give back to the store: refused by the broker (or maybe not received), or
// claimed while the loader could not take them (a forward ladder not yet declared, an offer
// made before the loader forgot its claims); and burst runs the burst bounds could not hold.
// The claimer gives them all back at once, so that any instance claims them again.
//
// Never blocks nor drops: each id is a claim this loader holds, counted in the memory bounds
// when it was claimed.
class RunsToGiveBack {
public:
    struct Taken {
        std::vector<std::string> refused;   // not published, or not confirmed
        std::vector<std::string> deferred;  // burst runs over the burst bounds
    };

    void refused(const std::vector<std::string>& ids) { append(refused_, ids); }
    void deferred(const std::vector<std::string>& ids) { append(deferred_, ids); }
    Taken take() {
        std::lock_guard lock(mutex_);
        return {std::exchange(refused_, {}), std::exchange(deferred_, {})};
    }
    bool any_refused() const {
        std::lock_guard lock(mutex_);
        return !refused_.empty();
    }

private:
    void append(std::vector<std::string>& to, const std::vector<std::string>& ids) {
        std::lock_guard lock(mutex_);
        to.insert(to.end(), ids.begin(), ids.end());
    }

    mutable std::mutex mutex_;
    std::vector<std::string> refused_;
    std::vector<std::string> deferred_;
};

// Wakes the claimer. ring() after anything it may act on (runs to give back, memory freed, a
// thread ended); ring(true) also asks for a claim at once (wake(), an urgent claim at insert).
// wait_for() returns early once a claim was asked or `ready` holds: `ready` runs under the
// doorbell's lock and may take the other hand-offs' locks, so none of them rings while holding
// its own.
class ClaimerDoorbell {
public:
    void ring(bool claim_asked = false) {
        {
            std::lock_guard lock(mutex_);
            claim_asked_ = claim_asked_ || claim_asked;
        }
        rung_.notify_all();
    }
    // Whether a claim was asked since the last call.
    bool take_claim_asked() {
        std::lock_guard lock(mutex_);
        return std::exchange(claim_asked_, false);
    }
    template <typename Ready>
    void wait_for(std::chrono::steady_clock::duration wait, Ready&& ready) {
        std::unique_lock lock(mutex_);
        rung_.wait_for(lock, wait, [&] { return claim_asked_ || ready(); });
    }

private:
    std::mutex mutex_;
    std::condition_variable rung_;
    bool claim_asked_ = false;
};

}  // namespace hourglass::loader
