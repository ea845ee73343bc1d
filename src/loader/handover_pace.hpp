// Whether the broker is slow to take hand-overs in (reference §6.2 "Hand-over while the broker
// is busy"). RabbitMQ starts a message's TTL when the message reaches its delay queue, so a run
// that reaches it late is released as late, however punctually it was published. The confirm
// comes after the run is in its queue, so the time a publish waits for its confirm bounds how
// late it got there. While confirms are slow (a confirm, or the oldest publish still awaiting
// one, slower than --slow-confirm), the publisher holds runs due later than a near rung and
// hands them over at that rung, when the broker has caught up; once confirms have been quick
// for kCalmAfter it hands over a horizon ahead again.
//
// The publisher's alone; pure: time is passed in, and it is unit-tested with plain values
// (tests/unit/loader/handover_pace_test.cpp).
#pragma once

#include <chrono>
#include <optional>

namespace hourglass::loader {

class HandoverPace {
public:
    using SteadyTime = std::chrono::steady_clock::time_point;
    // How long confirms must stay quick before runs are handed over a horizon ahead again.
    static constexpr auto kCalmAfter = std::chrono::seconds{1};

    // `slow_confirm` unset: never slow (--slow-confirm off).
    explicit HandoverPace(std::optional<std::chrono::microseconds> slow_confirm) : slow_confirm_(slow_confirm) {}

    // A publish has waited `waited` for its confirm at `now` (confirmed then, or still open).
    // Returns true when this starts a slow spell (for the log).
    bool waited(std::chrono::microseconds waited, SteadyTime now) noexcept {
        if (!slow_confirm_ || waited <= *slow_confirm_) return false;
        const bool starts = !slow(now);
        slow_until_ = now + kCalmAfter;
        return starts;
    }
    // Whether runs are held for a near rung at `now`.
    bool slow(SteadyTime now) const noexcept { return slow_until_ && now < *slow_until_; }

private:
    std::optional<std::chrono::microseconds> slow_confirm_;
    std::optional<SteadyTime> slow_until_;
};

}  // namespace hourglass::loader
