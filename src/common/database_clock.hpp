// The one clock (reference §6): this host's clock corrected by its offset to PostgreSQL's
// clock, so that instances on hosts whose clocks differ agree on when a job is due. The
// service measures the offset at start and the loader's heartbeat measures it again at every
// beat; the components that stamp or compare due times (ingest, loader, audit, console) are
// given the service's one DatabaseClock. A clock nobody follows is the host's clock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "hourglass/time.hpp"

namespace hourglass {

class DatabaseClock {
public:
    using Microseconds = std::chrono::microseconds;

    // The current instant on PostgreSQL's clock, as last measured: to the microsecond, and
    // truncated to the millisecond.
    std::chrono::sys_time<Microseconds> now_us() const noexcept {
        return std::chrono::time_point_cast<Microseconds>(std::chrono::system_clock::now()) +
               offset();
    }
    TimePoint now_ms() const noexcept { return std::chrono::time_point_cast<Milliseconds>(now_us()); }

    // PostgreSQL's clock minus this host's (0 until measured).
    Microseconds offset() const noexcept {
        return Microseconds{offset_us_.load(std::memory_order_relaxed)};
    }
    // Called by whoever measured it; read by every thread.
    void follow(Microseconds offset) noexcept {
        offset_us_.store(offset.count(), std::memory_order_relaxed);
    }

private:
    std::atomic<std::int64_t> offset_us_{0};
};

}  // namespace hourglass
