// A clock a unit test moves by hand: a monotonic time and a wall time that advance together,
// and nothing else moves them. Stages take it as their clock (loader::StageClock and the like),
// so a test says "a second passes" instead of sleeping for one.
#pragma once

#include <chrono>
#include <mutex>

namespace hourglass::testing {

class ManualClock {
public:
    using Steady = std::chrono::steady_clock::time_point;
    using Wall = std::chrono::sys_time<std::chrono::microseconds>;

    // Starts at an arbitrary instant far from either clock's epoch.
    ManualClock() : steady_(std::chrono::hours{1000}), wall_(std::chrono::sys_days{std::chrono::year{2026} / 12 / 7}) {}

    Steady steady() const {
        std::lock_guard lock(mutex_);
        return steady_;
    }
    Wall wall() const {
        std::lock_guard lock(mutex_);
        return wall_;
    }
    void advance(std::chrono::microseconds by) {
        std::lock_guard lock(mutex_);
        steady_ += by;
        wall_ += by;
    }

private:
    mutable std::mutex mutex_;
    Steady steady_;
    Wall wall_;
};

}  // namespace hourglass::testing
