#include "loader/publisher.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "common/retry.hpp"

namespace hourglass::loader {

Publisher::Publisher(Options options, Neighbours neighbours, Seams seams, StageClock clock)
    : options_(options),
      with_(neighbours),
      seams_(std::move(seams)),
      clock_(std::move(clock)),
      pace_(options.slow_confirm),
      near_rung_(with_.release_messages.ladder().ttl_for(TimePoint{kNearLead}, TimePoint{})) {}

void Publisher::note_confirm_wait(std::chrono::microseconds waited, std::chrono::steady_clock::time_point now) {
    if (pace_.waited(waited, now) && slow_log_.take(now).log) {
        spdlog::info("loader: the broker took {} ms to confirm a hand-over: runs due later than {} s "
                     "are held and handed over then, until it confirms within {} ms for {} s "
                     "(hourglass_handover_held_total)",
                     waited.count() / 1000, near_rung_.count() / 1000,
                     options_.slow_confirm->count() / 1000,
                     std::chrono::seconds{HandoverPace::kCalmAfter}.count());
    }
}

void Publisher::make_realtime() {
    if (options_.realtime == RealtimeMode::off) return;
    const int error = seams_.make_realtime();
    with_.metrics.set_publisher_realtime(error == 0);
    if (error == 0) {
        spdlog::info("loader: the publisher thread runs under real-time scheduling (SCHED_FIFO)");
    } else {
        // Not a fault: most deployments do not grant it. Hand-overs are then as punctual as
        // the machine's load lets a normal thread be (hourglass_handover_lateness_seconds).
        spdlog::info("loader: the publisher thread keeps normal scheduling, real-time was "
                     "refused: {}",
                     realtime_refused_reason(error));
    }
}

void Publisher::run(std::stop_token stop) {
    make_realtime();
    run_with_reconnect("loader (RabbitMQ)", stop, [&] { publish_session(stop); });
    with_.confirmed.close();
    with_.claimer.ring();
}

void Publisher::group_releases(std::vector<ScheduledRun>& batch, TimePoint now, unsigned first_lane) const {
    std::vector<delay::BatchRun> runs;
    runs.reserve(batch.size());
    for (const auto& scheduled : batch) runs.push_back({scheduled.run.get(), scheduled.burst, scheduled.expired});
    auto observed_with = with_.release_messages.group(runs, now, first_lane);
    for (std::size_t i = 0; i < batch.size(); ++i) {
        if (observed_with[i]) batch[i].observed_with = std::move(observed_with[i]);
    }
}

void Publisher::settle_confirm(InFlight& in_flight, const amqp::Confirm& confirm) {
    auto settled = in_flight.settle(confirm);
    std::vector<HandedOverRun> runs;
    std::vector<InFlight::Settled> refused;
    bool nacked_releases = false;
    const auto steady = clock_.steady();  // one reading for the confirm's runs
    for (auto& s : settled) {
        // A publish to the release exchange is refused when one queue bound to it refuses its
        // copy (x-overflow reject-publish at its limit): the others may have theirs, so the run
        // counts as released, never published again. A delay queue is a publish's only
        // destination: refused there, nothing was routed, and the run goes back.
        if (!s.ack && s.value.burst) {
            with_.metrics.count_release_nacks(1);
            nacked_releases = true;
        } else if (!s.ack) {
            refused.push_back(std::move(s));
            continue;
        }
        const auto& run = *s.value.run;
        const auto waited = std::chrono::duration_cast<std::chrono::microseconds>(steady - s.value.sent_at);
        with_.metrics.observe_handover_confirm(waited);
        note_confirm_wait(waited, steady);
        // An expired run is never observed: recorded as ended, never re-sent.
        runs.push_back({run.id, run.run, s.value.next_due,
                        options_.releases_observed && !s.value.expired, s.value.observed_with,
                        s.value.published_at, s.value.expired});
    }
    if (!runs.empty()) {
        std::vector<const ScheduledRun*> done;
        done.reserve(runs.size());
        for (const auto& s : settled) {
            if (s.ack || s.value.burst) done.push_back(&s.value);
        }
        with_.board.forget_published(done);
        with_.confirmed.push(std::move(runs));
        with_.claimer.ring();  // memory freed: a claim may fill it
    }
    if (nacked_releases && release_nack_log_.take(steady).log) {
        spdlog::warn("loader: the broker refused releases (basic.nack): a queue bound to the "
                     "release exchange refuses messages (full, x-overflow reject-publish?); "
                     "they count as released, not sent again (hourglass_release_nacks_total)");
    }
    if (!refused.empty()) {
        with_.metrics.count_delay_nacks(refused.size());
        spdlog::warn("loader: the broker refused {} publishes into delay queues (basic.nack); "
                     "their claims go back to the store",
                     refused.size());
        give_back(refused);
    }
}

Publisher::DueBatch Publisher::take_due(std::stop_token stop, const InFlight& in_flight) {
    DueBatch batch;
    batch.next_publish = clock_.now() + kIdleWait;
    // Only while this instance's claims are surely its own (live leases).
    const bool may_publish = with_.leases.may_publish(clock_.steady());
    TimePoint taken_at{};
    if (!stop.stop_requested() && may_publish) {
        taken_at = clock_.now();
        const auto steady = clock_.steady();
        if (const auto* oldest = in_flight.oldest()) {
            note_confirm_wait(std::chrono::duration_cast<std::chrono::microseconds>(steady - oldest->sent_at),
                              steady);
        }
        auto due = with_.board.take_due(taken_at, options_.max_unconfirmed,
                                        pace_.slow(steady) ? std::optional{near_rung_} : std::nullopt);
        with_.metrics.count_held_for_near_rung(due.held_for_near_rung);
        batch.runs = std::move(due.runs);
        batch.window_full = due.window_full;
        if (due.next_publish) batch.next_publish = std::min(batch.next_publish, *due.next_publish);
        with_.metrics.set_runs_held(due.held);
    } else {
        with_.metrics.set_runs_held(with_.board.held());
    }
    // One instant for the batch: every run in it was due to go by then, so each gets the TTL of
    // its rung, and the grouping and the publishes agree on the queue. Never before the instant
    // the runs were taken at: the one clock can step back (each heartbeat re-measures
    // PostgreSQL's), and a run published "before" its publish instant would round up to the
    // next rung's TTL and be released a whole step late.
    batch.now = std::max(taken_at, clock_.now());
    // Too late for the job (x-hourglass-expires-after): a hand-over now is a release at least
    // this late.
    for (auto& scheduled : batch.runs) {
        const auto& run = *scheduled.run;
        scheduled.expired = scheduled.skipped ||
                            (run.expires_after && batch.now - run.due_at > *run.expires_after);
    }
    return batch;
}

void Publisher::publish_batch(ReleaseChannel& channel, DueBatch& batch, InFlight& in_flight) {
    group_releases(batch.runs, batch.now, next_lane_);
    // The batch's publishes leave together (measured: 15 % more runs handed over a second in a
    // hotspot, 12 % less CPU per run), and are let go before the wait for their confirms.
    HeldSends held(channel, batch.runs.size() > 1);
    // The runs from the i-th on go back to the store unpublished.
    const auto give_back_from = [&](std::size_t i) {
        std::vector<InFlight::Settled> unpublished;
        for (auto j = i; j < batch.runs.size(); ++j) {
            unpublished.push_back({0, std::move(batch.runs[j]), false, false});
        }
        give_back(unpublished);
    };
    for (std::size_t i = 0; i < batch.runs.size(); ++i) {
        // The ownership rule (docs/architecture.md "Fencing"), before every publish, not once
        // a batch: a publish held up by the broker's flow control, or a pause of this process,
        // must not let the rest of a batch go after another instance may have taken it.
        if (!with_.leases.may_publish(clock_.steady())) {
            with_.metrics.count_publishes_withheld(batch.runs.size() - i);
            give_back_from(i);
            break;
        }
        auto& scheduled = batch.runs[i];
        const auto now = clock_.now_us();
        std::uint64_t sequence = 0;
        try {
            sequence = channel.publish(
                scheduled.expired
                    ? with_.release_messages.expired(*scheduled.run, batch.now, channel.frame_max(),
                                                     scheduled.skipped)
                    : with_.release_messages.release(*scheduled.run, batch.now, channel.frame_max(),
                                                     next_lane_, scheduled.observed_with, scheduled.burst));
            if (scheduled.skipped) with_.metrics.count_runs_skipped(1);
            else if (scheduled.expired) with_.metrics.count_runs_expired(1);
            else if (scheduled.burst) with_.metrics.count_burst_runs(1);
            next_lane_ = (next_lane_ + 1) % options_.delay_lanes;
        } catch (...) {
            // This run and the rest of the batch were not published: back to the store.
            give_back_from(i);
            throw;
        }
        with_.metrics.observe_handover_lateness(
            std::chrono::duration_cast<std::chrono::microseconds>(now - scheduled.publish_at));
        scheduled.published_at = std::chrono::time_point_cast<Milliseconds>(now);
        scheduled.sent_at = clock_.steady();
        in_flight.published(sequence, std::move(scheduled));
    }
    held.release();
}

void Publisher::await_confirms_or_runs(std::stop_token stop, ReleaseChannel& channel,
                                       const DueBatch& batch, InFlight& in_flight) {
    if (!in_flight.empty()) {
        const auto until_publish = std::chrono::duration_cast<std::chrono::microseconds>(
            batch.next_publish - clock_.now());
        // With the window full only a confirm lets the next run go: wait for one. Waiting for
        // the next publish instant, already past, would poll without sleeping (and a real-time
        // publisher would then keep a CPU from the broker that confirms).
        const auto wait = batch.window_full ? std::chrono::microseconds{kIdleWait}
                                            : std::clamp(until_publish, std::chrono::microseconds{0}, kConfirmPoll);
        for (auto event = channel.next_event(wait); event;
             event = channel.next_event(std::chrono::microseconds{0})) {
            if (const auto* confirm = std::get_if<amqp::Confirm>(&*event)) {
                settle_confirm(in_flight, *confirm);
            }
        }
        return;
    }
    // A wait for a duration, not until an instant: the one clock is corrected (and injected
    // in tests), the condition variable's is not.
    with_.board.wait_for_runs(batch.next_publish - clock_.now(), stop);
    // Keeps heartbeats flowing and notices a closed connection.
    while (auto event = channel.next_event(std::chrono::microseconds{0})) {
    }
}

void Publisher::publish_session(std::stop_token stop) {
    const auto channel = seams_.open_channel();
    InFlight in_flight;
    std::optional<std::chrono::steady_clock::time_point> stop_deadline;
    try {
        while (true) {
            const auto batch = publish_next(*channel, in_flight, stop);
            if (stop.stop_requested()) {
                if (!stop_deadline) stop_deadline = clock_.steady() + kShutdownConfirmWait;
                if (in_flight.empty() || clock_.steady() > *stop_deadline) break;
            }
            await_confirms_or_runs(stop, *channel, batch, in_flight);
        }
    } catch (...) {
        // Published or not, unconfirmed runs go back to the store: claimed again, at worst
        // released twice (at least once, reference §6).
        give_back(in_flight.take_unsettled());
        with_.metrics.set_unconfirmed_publishes(0);
        throw;
    }
    if (!in_flight.empty()) {
        spdlog::warn("loader: {} publishes unconfirmed at shutdown; their claims go back to the store",
                     in_flight.size());
    }
}

Publisher::DueBatch Publisher::publish_next(ReleaseChannel& channel, InFlight& in_flight,
                                            std::stop_token stop) {
    with_.metrics.set_unconfirmed_publishes(in_flight.size());
    auto batch = take_due(stop, in_flight);
    publish_batch(channel, batch, in_flight);
    return batch;
}

std::size_t Publisher::publish_due(ReleaseChannel& channel, InFlight& in_flight, std::stop_token stop) {
    const auto before = in_flight.size();
    publish_next(channel, in_flight, stop);
    return in_flight.size() - before;
}

void Publisher::settle_arrived(ReleaseChannel& channel, InFlight& in_flight) {
    while (auto event = channel.next_event(std::chrono::microseconds{0})) {
        if (const auto* confirm = std::get_if<amqp::Confirm>(&*event)) settle_confirm(in_flight, *confirm);
    }
}

void Publisher::give_back(const std::vector<InFlight::Settled>& runs) {
    if (runs.empty()) return;
    std::vector<std::string> ids;
    std::vector<const ScheduledRun*> published;
    for (const auto& settled : runs) {
        ids.push_back(settled.value.run->id);
        published.push_back(&settled.value);
    }
    with_.to_give_back.refused(ids);
    with_.board.forget_published(published);
    with_.held.remove(ids);
    with_.claimer.ring();
}

}  // namespace hourglass::loader
