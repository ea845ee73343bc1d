// When a run handed over to the broker counts as lost, so that the claimer publishes it again
// (reference §6 "Re-sends"): its release is still not observed `resend_after` after its due
// time, counted only while the loader and the audit are connected and the broker is seen
// releasing (release probes come back, health::ServiceHealth::releasing_since).
//
// After any break, whether a lost connection or a broker that stops releasing (a memory or disk
// alarm blocks every publisher, so that runs wait in the delay queues and no copy reaches the
// audit), the count starts again: the broker first releases what it held and the audit records
// it, and only what neither did within `resend_after` is lost. Counting through a long alarm
// took every run due during it for lost and released it twice once the alarm ended.
#pragma once

#include <memory>
#include <optional>

#include "common/health.hpp"
#include "hourglass/time.hpp"

namespace hourglass::loader {

class ResendRule {
public:
    ResendRule(Milliseconds resend_after, std::shared_ptr<const health::ServiceHealth> health);

    // The due time before which a handed-over run not yet observed counts as lost at `now`;
    // nothing while none can be. One caller (the claimer), in time order.
    std::optional<TimePoint> lost_if_due_before(TimePoint now);

private:
    // Since when the loader and the audit are connected and the broker releases; nothing if not.
    std::optional<TimePoint> observing_since(TimePoint now);

    Milliseconds resend_after_;
    std::shared_ptr<const health::ServiceHealth> health_;
    std::optional<TimePoint> connected_since_;  // without a break, as this rule saw it
    bool was_releasing_ = false;
    bool said_not_releasing_ = false;
};

}  // namespace hourglass::loader
