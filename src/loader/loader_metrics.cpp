#include "loader/loader_metrics.hpp"

namespace hourglass::loader {

LoaderMetrics::LoaderMetrics(metrics::Registry& registry)
    : runs_enqueued_(registry.add_counter(
          "hourglass_runs_enqueued_total",
          "Runs handed over to the delay queues (confirmed by the broker and recorded).")),
      runs_resent_(registry.add_counter(
          "hourglass_runs_resent_total",
          "Runs published again because their release was not observed (see --resend-after).")),
      claimed_at_insert_(registry.add_counter(
          "hourglass_runs_claimed_at_insert_total",
          "Runs leased to this instance's loader as ingest inserted them (due within the "
          "horizon while the loader had room), so that no claim had to take them.")),
      burst_runs_(registry.add_counter(
          "hourglass_burst_runs_total",
          "Runs of a burst (many due at one instant) published at their due time straight to the "
          "release exchange or the forward queue rather than through a delay queue (see "
          "--max-burst-runs).")),
      release_nacks_(registry.add_counter(
          "hourglass_release_nacks_total",
          "Burst runs whose publish to the release exchange the broker refused (basic.nack: a "
          "queue bound to it refused its copy, e.g. x-overflow reject-publish). The other queues "
          "may have their copy, so the run counts as released and is never published again.")),
      runs_expired_(registry.add_counter(
          "hourglass_runs_expired_total",
          "Runs handed over later than their x-hourglass-expires-after after their due time, sent "
          "to <prefix>.expired instead of being released.")),
      runs_skipped_(registry.add_counter(
          "hourglass_runs_skipped_total",
          "Missed runs of recurring jobs with x-cron-catchup: skip (a later run was already due "
          "when they were handed over), sent to <prefix>.expired instead of being released.")),
      delay_nacks_(registry.add_counter(
          "hourglass_delay_nacks_total",
          "Runs whose publish into a delay queue the broker refused (basic.nack): nothing was "
          "routed, so the run goes back to the store and is published again.")),
      orphaned_claims_(registry.add_counter(
          "hourglass_orphaned_claims_total",
          "Runs leased to this instance that its loader did not hold (a commit whose reply was "
          "lost), given back so that they are released.")),
      registration_lost_(registry.add_counter(
          "hourglass_registration_lost_total",
          "Times another instance took this one for dead (fenced it and gave its "
          "claims back); it then dropped every run it held before registering again.")),
      publishes_withheld_(registry.add_counter(
          "hourglass_publishes_withheld_total",
          "Runs due for publishing that the loader gave back unpublished because its last "
          "heartbeat was too old to be sure the runs were still its own (a stall, a pause).")),
      handover_held_(registry.add_counter(
          "hourglass_handover_held_total",
          "Runs held for a near rung because the broker was slow to confirm hand-overs (see "
          "--slow-confirm): handed over 5 s before they are due rather than a horizon ahead.")),
      runs_set_aside_(registry.add_counter(
          "hourglass_runs_set_aside_total",
          "Claimed runs that AMQP cannot carry (a short string over 255 bytes in a row written "
          "by hand), cancelled with their reason in hourglass.rejections instead of published.")),
      handover_lateness_seconds_(registry.add_histogram(
          "hourglass_handover_lateness_seconds",
          "Publish time of a run into its delay queue minus the instant that releases it on time "
          "(due minus the queue's TTL); the release is late by at least this.",
          metrics::kLatenessBuckets)),
      handover_confirm_seconds_(registry.add_histogram(
          "hourglass_handover_confirm_seconds",
          "Time from a run's publish to the broker's confirm of it. A delay queue starts the "
          "run's TTL when the run arrives, before the confirm: a run confirmed this long after "
          "its publish may be released up to this much late.",
          metrics::kLatenessBuckets)),
      unconfirmed_publishes_(registry.add_gauge(
          "hourglass_unconfirmed_publishes",
          "Runs published to the delay queues and not yet confirmed by the broker.")),
      runs_held_(registry.add_gauge(
          "hourglass_runs_held",
          "Claimed runs the loader holds in memory, waiting for their publish instant or for the "
          "broker's confirm.")),
      handovers_waiting_(registry.add_gauge(
          "hourglass_handovers_waiting",
          "Runs handed over (confirmed by the broker) whose record waits for rows another "
          "PostgreSQL transaction holds; the others are recorded meanwhile.")),
      clock_offset_seconds_(registry.add_gauge(
          "hourglass_clock_offset_seconds",
          "PostgreSQL's clock minus this host's, measured at each heartbeat; due times are "
          "compared on PostgreSQL's clock")),
      publisher_realtime_(registry.add_gauge(
          "hourglass_publisher_realtime",
          "1 when the loader's publisher thread runs under real-time scheduling (SCHED_FIFO, "
          "--realtime-publisher auto and permitted), 0 otherwise")) {}

void LoaderMetrics::observe_handover_lateness(std::chrono::microseconds lateness) noexcept {
    handover_lateness_seconds_.observe(std::chrono::duration<double>(lateness).count());
}

void LoaderMetrics::observe_handover_confirm(std::chrono::microseconds latency) noexcept {
    handover_confirm_seconds_.observe(std::chrono::duration<double>(latency).count());
}

void LoaderMetrics::set_clock_offset(std::chrono::microseconds offset) noexcept {
    clock_offset_seconds_.set(std::chrono::duration<double>(offset).count());
}

}  // namespace hourglass::loader
