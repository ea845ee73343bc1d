// Burst release (loader.hpp, kDefaultMaxBurstRuns): which runs of a claim are runs of a burst,
// an instant shared by at least `min_runs` runs, claimed at once or over several claims (a
// hotspot). A burst run is held until its instant and published straight to the release
// exchange; one the burst bounds cannot hold goes back to the store, and claims stop short of
// its instant (the cut) until it is a ladder step away.
//
// The claimer's alone (its state lives from claim to claim); pure: time is passed in, and it
// is unit-tested with plain values (tests/unit/loader/burst_planner_test.cpp).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "hourglass/time.hpp"
#include "loader/memory_ledger.hpp"

namespace hourglass::loader {

// What becomes of one claimed run.
enum class BurstPlan {
    delay_queues,  // not a burst run: published into its delay queue
    burst,         // a burst run within a step of its instant: held as any run is
    burst_held,    // a burst run held ahead of its instant, within the burst bounds
    deferred,      // a burst run the burst bounds cannot hold: back to the store
};

struct PlannedRun {
    TimePoint due_at;
    std::size_t bytes = 0;  // body and properties
};

class BurstPlanner {
public:
    // `min_runs` 0: burst release is off. `max_shared_instants` bounds the instants counted
    // over several claims; `horizon` is how long an instant stays a burst after it passed.
    BurstPlanner(std::size_t min_runs, bool enabled, Milliseconds horizon, Milliseconds step,
                 std::size_t max_shared_instants);

    // The plan of each run of one claim (in order) at `now`; counts the burst-held runs in
    // `ledger`, and moves the cut to the earliest instant of a deferred run.
    std::vector<BurstPlan> plan(std::span<const PlannedRun> runs, TimePoint now, MemoryLedger& ledger);

    // The earliest instant of a burst with runs left in the store for want of room: claims take
    // no run due at or after it until it is a step away.
    std::optional<TimePoint> cut() const noexcept { return cut_; }
    // Whether the cut is a step away at `now` (then it ends: the next claim takes those runs,
    // within the others' bounds, so that they are in hand by the instant).
    bool cut_reached(TimePoint now);

private:
    std::size_t min_runs_;
    bool enabled_;
    Milliseconds horizon_;
    Milliseconds step_;
    std::size_t max_shared_instants_;
    // Instants found to be bursts, until a horizon after they passed.
    std::set<TimePoint> burst_instants_;
    // Runs claimed so far per instant shared by runs of a claim, until the instant passed.
    std::map<TimePoint, std::size_t> shared_instants_;
    std::optional<TimePoint> cut_;
};

}  // namespace hourglass::loader
