#include "loader/heartbeat.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "common/retry.hpp"

namespace hourglass::loader {

Heartbeat::Heartbeat(Options options, Neighbours neighbours, StageClock clock)
    : options_(std::move(options)), with_(neighbours), clock_(std::move(clock)) {}

void Heartbeat::run(std::stop_token stop, const store::OpenClaimStore& open_store,
                    const store::StoreOptions& store_options) {
    // Tried again within a beat's interval, never the 10 s a lost connection waits elsewhere:
    // a silence of kTakeoverAfter gets this instance fenced.
    const Backoff backoff{.initial = Milliseconds{100}, .max = with_.leases.timings().heartbeat_every};
    run_with_reconnect(
        "loader (heartbeat)", stop,
        [&] {
            const auto store = open_store(store_options);
            do {
                beat(*store);
            } while (sleep_unless_stopped(stop, with_.leases.timings().heartbeat_every));
        },
        backoff);
}

void Heartbeat::beat(store::ClaimStore& store) {
    const auto& timings = with_.leases.timings();
    // Registers again only once the claimer dropped what it held (fencing).
    if (!registered_ && !with_.leases.claims_lost()) {
        store.register_instance(options_.owner);
        registered_ = true;
    }
    if (!registered_) return;
    const auto sent = clock_.steady();
    // A taker must itself have beaten without a break for the grace: after a stall of
    // PostgreSQL every instance looks silent, and the live ones' beats land meanwhile.
    const auto beat = store.heartbeat(options_.owner, timings.takeover_after, timings.publish_grace);
    if (!beat.registered) {
        registered_ = false;
        with_.leases.registration_lost();
        with_.metrics.count_registration_lost();
        spdlog::warn("loader: another instance took this one for dead (its heartbeat was {} ms "
                     "or more late): it publishes nothing more until it registers again",
                     timings.takeover_after.count());
        with_.claimer.ring(true);  // the claimer gives back what it never published, at once
        return;
    }
    with_.leases.beat_succeeded(sent);
    follow_database_clock(store.measure_clock_offset());
    if (!beat.dead.empty()) {
        spdlog::warn("loader: {} instances stopped beating; their claims are taken over",
                     beat.dead.size());
        with_.claimer.ring(true);  // claim them at once, not at the next poll
    }
    if (clock_.steady() >= next_reconcile_) {
        next_reconcile_ = clock_.steady() + timings.reconcile_every;
        // Its failure must not hold up the beats: tried again at the next round (a lost
        // connection fails the next beat, which reconnects).
        try {
            give_back_orphaned_claims(store);
        } catch (const std::exception& error) {
            spdlog::warn("loader: could not look for orphaned claims: {}", error.what());
        }
    }
}

void Heartbeat::give_back_orphaned_claims(store::ClaimStore& store) {
    // No lease younger than an offer ingest has not ended: its transaction may have committed
    // part of a batch and wait on a locked row for the rest, before it hands the runs over.
    auto age = with_.leases.timings().orphan_age;
    if (const auto oldest = with_.insert_claims.oldest_open_offer()) {
        age = std::max(age, std::chrono::duration_cast<Milliseconds>(clock_.now() - *oldest) +
                                kOpenOfferMargin);
    }
    // Read after the rows, so that a run handed over in between is not taken for an orphan; a
    // run given back in between is given back again, which changes nothing.
    const auto leased = store.claims_older_than(options_.owner, options_.claim_lease, age);
    if (leased.empty()) return;
    const auto orphans = with_.held.not_held(leased);
    const auto given_back = store.release_orphaned_claims(options_.owner, orphans, options_.claim_lease, age);
    if (given_back == 0) return;
    with_.metrics.count_orphaned_claims(given_back);
    spdlog::warn("loader: gave back {} runs leased to this instance that it did not hold (a "
                 "commit whose reply was lost)",
                 given_back);
    with_.claimer.ring(true);
}

// One clock (reference §6): due times are compared on PostgreSQL's clock. Each beat measures
// this host's offset to it; the one clock follows it, so a host whose clock runs ahead does not
// release early. An offset beyond --max-clock-offset is refused at start (cli) and logged here.
void Heartbeat::follow_database_clock(ClockOffset measured) {
    with_.database_clock.follow(measured);
    const auto offset = measured.offset;
    with_.metrics.set_clock_offset(offset);
    const bool beyond = std::chrono::abs(offset) > options_.max_clock_offset;
    if (beyond && !clock_offset_reported_) {
        spdlog::error("loader: this host's clock is {} ms off PostgreSQL's (more than "
                      "--max-clock-offset {} ms); correcting for it, but synchronise it (NTP)",
                      -std::chrono::duration_cast<Milliseconds>(offset).count(),
                      options_.max_clock_offset.count());
    }
    clock_offset_reported_ = beyond;
}

}  // namespace hourglass::loader
