// Recurring jobs (reference §3.1, §5): the glue between a job's CronSpec and the cron engine.
// first_run validates a schedule command (expression, zone, until, limit) and gives its first
// due time; next_run gives the due time that follows a run handed over to the delay topology,
// coalescing runs missed while no hourglass was running.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "common/log_budget.hpp"
#include "hourglass/command.hpp"
#include "hourglass/job.hpp"

namespace hourglass::cron {

// The first run strictly after `accepted_at`, or a rejection reason naming the header at fault.
std::variant<TimePoint, std::string> first_run(const CronSpec& spec, TimePoint accepted_at);

struct NextRun {
    std::optional<TimePoint> due;  // empty: the job has had its last run
    std::size_t coalesced = 0;     // later runs that fell before `now` and are not released
    // Later runs were due at `now`, so this one was missed (see AfterHandover).
    bool missed = false;
};

// After run number `run`, due at `due`, was handed over at `now`: the next run. When runs that
// fell between `due` and `now` (service down, the job paused, a backlog) are due already, the
// run was missed, and spec.catchup says what follows (reference §5): with `one` and `skip` the
// later ones are coalesced and the schedule continues from now; with `all` the next is the
// first of them (the latest kMaxCatchupRuns, older ones coalesced).
NextRun next_run(const CronSpec& spec, int run, TimePoint due, TimePoint now);

// next_run for a claimed run, as the loader calls it (empty for one-shot jobs). Logs coalesced
// runs within a budget of lines: after an outage, a popular cron minute coalesces the runs of
// thousands of jobs in one claim. One per loader (called from its claimer thread only).
class NextDueAfterHandover {
public:
    AfterHandover operator()(const ClaimedRun& run, TimePoint now);

private:
    LogBudget coalesced_lines_;
};

}  // namespace hourglass::cron
