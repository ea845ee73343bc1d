// A claimed run while the loader holds it in memory: waiting for its publish instant, then for
// its confirm; and the schedule of those waiting, earliest first.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "hourglass/job.hpp"
#include "hourglass/time.hpp"

namespace hourglass::loader {

struct ScheduledRun {
    TimePoint publish_at;
    // By pointer, so that the schedule's heap moves a few words per step, not a whole run,
    // and keeps no capacity for the runs of a past hotspot (about 700 bytes each).
    std::unique_ptr<ClaimedRun> run;
    std::size_t bytes = 0;  // body and properties, counted in the memory ledger until confirmed
    // Set at publish for a run of a release group other than its last (see group_releases).
    std::optional<RunRef> observed_with;
    // A run of a burst: published at its due time straight to the release exchange (the
    // forward queue's exchange if targeted).
    bool burst = false;
    // A burst run held ahead of its due time, counted against the burst bounds rather than
    // the others (one claimed within a ladder step of its due time counts against the
    // others, as any run held that long before its publish).
    bool burst_held = false;
    // A recurring run's next due time, computed when it was claimed: off the publisher's
    // thread, which would otherwise parse a cron expression per confirm of a burst.
    std::optional<TimePoint> next_due;
    TimePoint published_at{};  // set at its publish: its enqueued_at
    // Its publish on the monotonic clock, for the time its confirm takes.
    std::chrono::steady_clock::time_point sent_at{};
    // Handed over later than its x-hourglass-expires-after: goes to <prefix>.expired.
    bool expired = false;
    // A missed run of a job with x-cron-catchup: skip: goes to <prefix>.expired too.
    bool skipped = false;
};

// The runs waiting for their publish instant, earliest first. A heap over a vector rather
// than std::priority_queue, whose top can only be copied out.
class PublishSchedule {
public:
    void push(ScheduledRun scheduled);
    const ScheduledRun& top() const { return heap_.front(); }
    ScheduledRun take_top();
    bool empty() const noexcept { return heap_.empty(); }
    std::size_t size() const noexcept { return heap_.size(); }

private:
    static bool later(const ScheduledRun& a, const ScheduledRun& b) { return a.publish_at > b.publish_at; }
    std::vector<ScheduledRun> heap_;
};

}  // namespace hourglass::loader
