// The two clocks a loader stage reads, given from outside so that a test can drive them: `now`,
// the one clock due times are compared on (PostgreSQL's, reference §6 "One clock"), and
// `steady`, the monotonic clock of heartbeats, leases and pacing. The loader gives its stages
// the service's; a unit test gives a manual clock it advances.
#pragma once

#include <chrono>
#include <functional>

#include "hourglass/time.hpp"

namespace hourglass::loader {

struct StageClock {
    std::function<std::chrono::sys_time<std::chrono::microseconds>()> now_us;
    std::function<std::chrono::steady_clock::time_point()> steady;

    // The one clock, to the millisecond (as due times are stored).
    TimePoint now() const { return std::chrono::time_point_cast<Milliseconds>(now_us()); }
};

}  // namespace hourglass::loader
