// The loader's memory bounds (--max-in-memory-runs, --max-in-memory-bytes, the burst bounds):
// what the runs it holds take, what ingest's open offers reserve (claims at insert), and so
// how much the next claim or offer may take. Burst runs held ahead of their instant count
// against bounds of their own, not the others'.
//
// A plain value: the ScheduleBoard owns it under its lock (the claimer holds, ingest's offers
// reserve, the publisher forgets); unit-tested with plain numbers.
#pragma once

#include <algorithm>
#include <cstddef>

namespace hourglass::loader {

struct MemoryBounds {
    std::size_t max_runs = 30000;
    std::size_t max_bytes = 64u << 20;
    std::size_t claim_batch = 1000;  // runs one claim takes at most
    std::size_t max_burst_runs = 20000;
    std::size_t max_burst_bytes = 16u << 20;
};

class MemoryLedger {
public:
    explicit MemoryLedger(MemoryBounds bounds) : bounds_(bounds) {}

    // Runs the next claim may take (0 when full), with `held_runs` scheduled or in flight.
    std::size_t claim_runs(std::size_t held_runs) const noexcept {
        const auto held = others_runs(held_runs);
        if (held >= bounds_.max_runs || others_bytes() >= bounds_.max_bytes) return 0;
        return std::min(bounds_.claim_batch, bounds_.max_runs - held);
    }
    // Bytes of bodies and properties the next claim or offer may take.
    std::size_t claim_bytes() const noexcept {
        return bounds_.max_bytes - std::min(others_bytes(), bounds_.max_bytes);
    }

    // An offer to ingest reserves its room until its runs are scheduled or it is withdrawn.
    void reserve(std::size_t runs, std::size_t bytes) noexcept {
        reserved_runs_ += runs;
        reserved_bytes_ += bytes;
    }
    void end_reservation(std::size_t runs, std::size_t bytes) noexcept {
        reserved_runs_ -= std::min(reserved_runs_, runs);
        reserved_bytes_ -= std::min(reserved_bytes_, bytes);
    }

    // A run scheduled; `burst_held`: a burst run held ahead of its instant (see hold_burst).
    void hold(std::size_t bytes) noexcept { bytes_ += bytes; }
    // Whether the burst bounds have room for one more burst run of `bytes`; if so, counts it
    // (it is also held: hold()).
    bool hold_burst(std::size_t bytes) noexcept {
        if (burst_runs_ >= bounds_.max_burst_runs || burst_bytes_ + bytes > bounds_.max_burst_bytes) {
            return false;
        }
        ++burst_runs_;
        burst_bytes_ += bytes;
        return true;
    }
    // A run confirmed, given back or forgotten.
    void forget(std::size_t bytes, bool burst_held) noexcept {
        bytes_ -= std::min(bytes_, bytes);
        if (burst_held) {
            burst_runs_ -= std::min<std::size_t>(burst_runs_, 1);
            burst_bytes_ -= std::min(burst_bytes_, bytes);
        }
    }
    // Everything held is gone (a stop); open reservations stay until their offers end.
    void forget_all() noexcept {
        bytes_ = 0;
        burst_runs_ = 0;
        burst_bytes_ = 0;
    }

    // Whether a run may be held longer than its rung asks (HandoverPace): only while the runs
    // held, burst runs aside, fill less than half the bounds, so that claims keep room for the
    // runs due sooner.
    bool room_to_hold_longer(std::size_t held_runs) const noexcept {
        return others_runs(held_runs) < bounds_.max_runs / 2 && others_bytes() < bounds_.max_bytes / 2;
    }

    std::size_t burst_runs() const noexcept { return burst_runs_; }
    std::size_t bytes() const noexcept { return bytes_; }
    const MemoryBounds& bounds() const noexcept { return bounds_; }

private:
    // Of `held_runs`, those not burst-held, plus reserved: what counts against max_runs.
    std::size_t others_runs(std::size_t held_runs) const noexcept {
        return held_runs - std::min(held_runs, burst_runs_) + reserved_runs_;
    }
    // Held but not burst-held, plus reserved: what counts against max_bytes.
    std::size_t others_bytes() const noexcept {
        return bytes_ - std::min(bytes_, burst_bytes_) + reserved_bytes_;
    }

    MemoryBounds bounds_;
    std::size_t bytes_ = 0;  // bodies and properties of scheduled and in-flight runs
    std::size_t burst_runs_ = 0;  // of those, burst runs held ahead of their instant
    std::size_t burst_bytes_ = 0;
    std::size_t reserved_runs_ = 0;  // by open offers of claims at insert
    std::size_t reserved_bytes_ = 0;
};

}  // namespace hourglass::loader
