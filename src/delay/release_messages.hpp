// How a claimed run leaves for the broker (reference §6.2): the message published into the
// delay queue of its TTL (or straight to the release exchange for a burst), with its body and
// properties untouched but for the x-hourglass-* headers, and the release groups that let the
// audit receive one copy per group of runs that share a queue and a due time.
// Pure: unit-tested with plain values (tests/unit/delay/release_messages_test.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "delay/topology.hpp"
#include "hourglass/job.hpp"
#include "hourglass/message.hpp"

namespace hourglass::delay {

// A run of a batch about to be published, as release grouping sees it.
struct BatchRun {
    const ClaimedRun* run = nullptr;
    bool burst = false;    // published at its due time to the release (or forward) exchange
    bool expired = false;  // to <prefix>.expired: no delay queue, nothing observes it
};

// Why `run` cannot be released at all, or nothing: its routing key or target exchange, or a
// property or header name, is longer than an AMQP short string (unpublishable_reason).
std::optional<std::string> unpublishable_reason(const ClaimedRun& run);

class ReleaseMessages {
public:
    // `releases_observed`: the audit is on (false with --no-audit).
    ReleaseMessages(TopologyOptions topology, DelayLadder ladder, bool releases_observed);

    // The run as published at `now` into the delay queue of its TTL and of `lane` (delay
    // lanes), or of the forward ladder for a targeted run. With the audit on, a run
    // `observed_with` the last run of its release group takes no copy of its own: an
    // untargeted run then goes without the audit key, and a targeted one tells the forwarder
    // so in a header. Every other untargeted run gets the audit key (BCC), so its release is
    // copied to the audit. A burst run goes to the exchange its delay queue dead-letters into:
    // the release exchange, or the forward queue's exchange for a targeted run. Takes the run's
    // body and properties: once published, only its identity is needed. Headers that would not
    // fit a frame of `frame_max` bytes are dropped, largest first, and the release says so.
    Message release(ClaimedRun& run, TimePoint now, std::size_t frame_max, unsigned lane,
                    const std::optional<RunRef>& observed_with, bool burst) const;
    // The run as sent to <prefix>.expired: as released, with the reason in x-hourglass-error
    // (too late for its x-hourglass-expires-after, or a missed run `skipped` by its catch-up).
    Message expired(ClaimedRun& run, TimePoint now, std::size_t frame_max, bool skipped) const;

    // Release groups among runs about to be published in this order at `now`, from lane
    // `first_lane` on: the runs for one delay queue (a lane of the delay ladder, or a queue of
    // the forward ladder) with one due time. Returns, per run, the last run of its group it is
    // observed with (none: it takes its own copy). Runs that must observe themselves
    // (ClaimedRun::observe_itself), runs routed with the audit key and expired runs are never
    // observed with another; with the audit off, nothing is.
    std::vector<std::optional<RunRef>> group(std::span<const BatchRun> batch, TimePoint now,
                                             unsigned first_lane) const;

    const DelayLadder& ladder() const noexcept { return ladder_; }

private:
    TopologyOptions topology_;
    DelayLadder ladder_;
    bool releases_observed_;
};

}  // namespace hourglass::delay
