// The loader's series (/metrics): runs handed over, re-sent, claimed at insert and released as
// bursts, how late each hand-over was,
// publishes awaiting a confirm, runs held in memory, hand-overs whose record waits for a lock,
// the clock offset to PostgreSQL and the publisher's scheduling.
#pragma once

#include <chrono>
#include <cstddef>

#include "common/metrics.hpp"

namespace hourglass::loader {

class LoaderMetrics {
public:
    // Registers the series in `registry`, once per service.
    explicit LoaderMetrics(metrics::Registry& registry);

    // Runs recorded as handed over to the delay topology (confirmed by the broker).
    void count_runs_enqueued(std::size_t runs) noexcept { runs_enqueued_.increment(runs); }
    void count_runs_resent(std::size_t runs) noexcept { runs_resent_.increment(runs); }
    // Runs ingest leased to this loader as it inserted them (claims at insert): no claim took them.
    void count_claimed_at_insert(std::size_t runs) noexcept { claimed_at_insert_.increment(runs); }
    // Runs of a burst published at their due time straight to the release exchange.
    void count_burst_runs(std::size_t runs) noexcept { burst_runs_.increment(runs); }
    // Publishes the broker refused (basic.nack): straight to the release exchange (a consumer
    // queue refused its copy; counted as released, never published again) or into a delay
    // queue (nothing was routed; the run goes back to the store).
    void count_release_nacks(std::size_t runs) noexcept { release_nacks_.increment(runs); }
    // Runs handed over later than their x-hourglass-expires-after, sent to <prefix>.expired.
    void count_runs_expired(std::size_t runs) noexcept { runs_expired_.increment(runs); }
    void count_runs_skipped(std::size_t runs) noexcept { runs_skipped_.increment(runs); }
    void count_delay_nacks(std::size_t runs) noexcept { delay_nacks_.increment(runs); }
    // Runs leased to this instance that it did not hold (a lost commit reply), given back.
    void count_orphaned_claims(std::size_t runs) noexcept { orphaned_claims_.increment(runs); }
    // Times another instance took this one for dead: it dropped what it held.
    void count_registration_lost() noexcept { registration_lost_.increment(1); }
    void count_publishes_withheld(std::size_t runs) noexcept { publishes_withheld_.increment(runs); }
    // Runs held for a near rung while the broker was slow to confirm (HandoverPace).
    void count_held_for_near_rung(std::size_t runs) noexcept { handover_held_.increment(runs); }
    void count_runs_set_aside(std::size_t runs) noexcept { runs_set_aside_.increment(runs); }
    // How long after its publish instant (due − TTL) a run was published into a delay queue:
    // its release is late by at least this, whatever the broker does.
    void observe_handover_lateness(std::chrono::microseconds lateness) noexcept;
    // How long the broker took to confirm a run the loader published. A delay queue starts a
    // run's TTL when the run arrives, before its confirm: a run confirmed this long after its
    // publish may be released up to this much late.
    void observe_handover_confirm(std::chrono::microseconds latency) noexcept;
    void set_unconfirmed_publishes(std::size_t publishes) noexcept {
        unconfirmed_publishes_.set(static_cast<double>(publishes));
    }
    // Claimed runs in memory: waiting for their publish instant or for a confirm.
    void set_runs_held(std::size_t runs) noexcept { runs_held_.set(static_cast<double>(runs)); }
    // Runs the broker confirmed whose record waits for rows another transaction holds.
    void set_handovers_waiting(std::size_t runs) noexcept {
        handovers_waiting_.set(static_cast<double>(runs));
    }
    void set_clock_offset(std::chrono::microseconds offset) noexcept;
    // Whether the publisher thread got real-time scheduling (--realtime-publisher).
    void set_publisher_realtime(bool realtime) noexcept { publisher_realtime_.set(realtime ? 1 : 0); }

private:
    metrics::Counter& runs_enqueued_;
    metrics::Counter& runs_resent_;
    metrics::Counter& claimed_at_insert_;
    metrics::Counter& burst_runs_;
    metrics::Counter& release_nacks_;
    metrics::Counter& runs_expired_;
    metrics::Counter& runs_skipped_;
    metrics::Counter& delay_nacks_;
    metrics::Counter& orphaned_claims_;
    metrics::Counter& registration_lost_;
    metrics::Counter& publishes_withheld_;
    metrics::Counter& handover_held_;
    metrics::Counter& runs_set_aside_;
    metrics::Histogram& handover_lateness_seconds_;
    metrics::Histogram& handover_confirm_seconds_;
    metrics::Gauge& unconfirmed_publishes_;
    metrics::Gauge& runs_held_;
    metrics::Gauge& handovers_waiting_;
    metrics::Gauge& clock_offset_seconds_;
    metrics::Gauge& publisher_realtime_;
};

}  // namespace hourglass::loader
