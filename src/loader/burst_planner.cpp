#include "loader/burst_planner.hpp"

namespace hourglass::loader {

BurstPlanner::BurstPlanner(std::size_t min_runs, bool enabled, Milliseconds horizon,
                           Milliseconds step, std::size_t max_shared_instants)
    : min_runs_(min_runs),
      enabled_(enabled),
      horizon_(horizon),
      step_(step),
      max_shared_instants_(max_shared_instants) {}

std::vector<BurstPlan> BurstPlanner::plan(std::span<const PlannedRun> runs, TimePoint now,
                                          MemoryLedger& ledger) {
    std::vector<BurstPlan> plans(runs.size(), BurstPlan::delay_queues);
    if (!enabled_) return plans;
    // Every run counts: a recurring run of a burst (a popular cron minute) moves its row on to
    // the next run at its confirm, at the instant, as a one-shot run's ends `enqueued` then. A
    // targeted run of a burst goes to the forward queue at its due time, as its forward delay
    // queue would send it.
    // Kept a horizon after the instant: the runs of a burst claimed late go the same way.
    std::erase_if(burst_instants_, [&](TimePoint instant) { return instant < now - horizon_; });
    std::erase_if(shared_instants_, [&](const auto& counted) { return counted.first < now; });
    std::map<TimePoint, std::size_t> per_instant;
    for (const auto& run : runs) ++per_instant[run.due_at];
    // A burst whose runs come into the horizon over several claims (a hotspot scheduled within
    // the horizon, at a pace) counts them all: its later runs go out as a burst. Only instants
    // shared by runs of one claim are counted, so runs due at distinct instants (a steady
    // load) take no room, and at most max_shared_instants are (beyond them, an instant is a
    // burst by one claim's runs alone).
    for (const auto& [instant, count] : per_instant) {
        auto counted = shared_instants_.find(instant);
        if (counted == shared_instants_.end() && count > 1 &&
            shared_instants_.size() < max_shared_instants_) {
            counted = shared_instants_.emplace(instant, 0).first;
        }
        const auto total = counted == shared_instants_.end() ? count : (counted->second += count);
        if (total >= min_runs_) burst_instants_.insert(instant);
    }
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const auto& run = runs[i];
        if (!burst_instants_.contains(run.due_at)) continue;
        // Within a step of its due time it is held no longer than any run published into a
        // delay queue: the others' bounds hold it.
        if (run.due_at <= now + step_) {
            plans[i] = BurstPlan::burst;
        } else if (ledger.hold_burst(run.bytes)) {
            plans[i] = BurstPlan::burst_held;
        } else {
            // No room to hold it: back to the store until its instant.
            cut_ = cut_ ? std::min(*cut_, run.due_at) : run.due_at;
            plans[i] = BurstPlan::deferred;
        }
    }
    return plans;
}

bool BurstPlanner::cut_reached(TimePoint now) {
    if (!cut_ || now < *cut_ - step_) return false;
    cut_.reset();
    return true;
}

}  // namespace hourglass::loader
