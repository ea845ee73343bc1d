// The one clock (reference §6): this host's clock corrected by its offset to PostgreSQL's
// clock, so that instances on hosts whose clocks differ agree on when a job is due. The
// service measures the offset at start and the loader's heartbeat measures it again at every
// beat; the components that stamp or compare due times (ingest, the SQL intake, loader, audit,
// console) are given the service's one DatabaseClock. A clock nobody follows is the host's
// clock.
//
// Between two measurements it runs on the monotonic clock from the last one: a step of the
// host's clock (an operator's `date -s`, a virtual machine resumed, NTP stepping) moves it
// only at the next measurement, which measures the step away, so the loader never publishes
// a run early by a forward step nor holds one back by a backward one.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "hourglass/time.hpp"

namespace hourglass {

// One measurement of PostgreSQL's clock against this host's: the offset (PostgreSQL's minus
// the host's) as its lower bound, and the round trip it was read within, which bounds how much
// the true offset may exceed it.
struct ClockOffset {
    std::chrono::microseconds offset{0};
    std::chrono::microseconds round_trip{0};
};

class DatabaseClock {
public:
    using Microseconds = std::chrono::microseconds;
    using SteadyTime = std::chrono::steady_clock::time_point;
    using SystemTime = std::chrono::sys_time<Microseconds>;

    // The current instant on PostgreSQL's clock, as last measured: to the microsecond, and
    // truncated to the millisecond.
    SystemTime now_us() const noexcept {
        if (!anchored_.load(std::memory_order_acquire)) {
            return std::chrono::time_point_cast<Microseconds>(std::chrono::system_clock::now());
        }
        return now_us_at(std::chrono::steady_clock::now());
    }
    TimePoint now_ms() const noexcept { return std::chrono::time_point_cast<Milliseconds>(now_us()); }
    // The instant on PostgreSQL's clock at `steady` of the monotonic clock, once followed.
    SystemTime now_us_at(SteadyTime steady) const noexcept {
        return SystemTime{Microseconds{steady_to_database_us_.load(std::memory_order_relaxed)}} +
               std::chrono::duration_cast<Microseconds>(steady.time_since_epoch());
    }

    // The latest PostgreSQL's clock may read now: now_us() never runs ahead of it, and lags it
    // by up to the last measurement's round trip. What stamps an observation (the audit's
    // `released_at`), so that a release measured after a quicker measurement than the one its
    // publish followed never reads as earlier than its due time.
    SystemTime latest_us() const noexcept { return latest_us_at(std::chrono::steady_clock::now()); }
    SystemTime latest_us_at(SteadyTime steady) const noexcept {
        return now_us_at(steady) + Microseconds{round_trip_us_.load(std::memory_order_relaxed)};
    }
    // PostgreSQL's clock minus this host's, as last measured (0 until measured).
    Microseconds offset() const noexcept {
        return Microseconds{offset_us_.load(std::memory_order_relaxed)};
    }
    // Called by whoever measured `offset`, right after measuring it; read by every thread.
    void follow(ClockOffset measured) noexcept {
        follow(measured, std::chrono::time_point_cast<Microseconds>(std::chrono::system_clock::now()),
               std::chrono::steady_clock::now());
    }
    // The same with the host's two clocks read at one instant (tests give them).
    void follow(ClockOffset measured, SystemTime system, SteadyTime steady) noexcept {
        const auto offset = measured.offset;
        offset_us_.store(offset.count(), std::memory_order_relaxed);
        round_trip_us_.store(measured.round_trip.count(), std::memory_order_relaxed);
        const auto database = system + offset;
        steady_to_database_us_.store(
            (database.time_since_epoch() -
             std::chrono::duration_cast<Microseconds>(steady.time_since_epoch()))
                .count(),
            std::memory_order_relaxed);
        anchored_.store(true, std::memory_order_release);
    }

private:
    std::atomic<std::int64_t> offset_us_{0};
    std::atomic<std::int64_t> round_trip_us_{0};  // of the last measurement
    // PostgreSQL's clock minus the monotonic clock, at the last measurement.
    std::atomic<std::int64_t> steady_to_database_us_{0};
    std::atomic<bool> anchored_{false};
};

}  // namespace hourglass
