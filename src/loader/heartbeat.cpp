// The loader's heartbeat thread: live leases and fencing (lease_keeper.hpp), orphaned claims,
// and the one clock's offset to PostgreSQL's.
#include "loader/loader.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "amqp/confirm_tracker.hpp"
#include "common/retry.hpp"
#include "common/text.hpp"
#include "common/thread_name.hpp"

namespace hourglass::loader {

void Loader::heartbeat_loop(std::stop_token stop) {
    auto store_options = options_.store;
    store_options.open_connections = nullptr;  // the loader's own connection counts for it
    bool registered = false;  // kept across reconnects: a beat that finds no row was taken for dead
    auto next_reconcile = seams_.steady_now();
    run_with_reconnect("loader (heartbeat)", stop, [&] {
        const auto store = seams_.open_store(store_options);
        const auto& timings = leases_.timings();
        do {
            // Registers again only once the claimer dropped what it held (fencing).
            if (!registered && !leases_.claims_lost()) {
                store->register_instance(options_.owner);
                registered = true;
            }
            if (!registered) continue;
            const auto sent = seams_.steady_now();
            // A taker must have beaten recently itself: after a stall of PostgreSQL every
            // instance looks silent, and the live ones beat again within a second.
            const auto beat = store->heartbeat(options_.owner, timings.takeover_after,
                                               timings.publish_grace);
            if (!beat.registered) {
                registered = false;
                leases_.registration_lost();
                metrics_.count_registration_lost();
                spdlog::warn("loader: another instance took this one for dead (its heartbeat "
                             "was {} ms or more late): dropping every run it holds",
                             timings.takeover_after.count());
                wake();  // the claimer drops them at once
                continue;
            }
            leases_.beat_succeeded(sent);
            follow_database_clock(store->measure_clock_offset());
            if (!beat.dead.empty()) {
                spdlog::warn("loader: {} instances stopped beating; their claims are taken over",
                             beat.dead.size());
                wake();  // claim them at once, not at the next poll
            }
            if (seams_.steady_now() >= next_reconcile) {
                next_reconcile = seams_.steady_now() + timings.reconcile_every;
                // Its failure must not hold up the beats: tried again at the next round (a lost
                // connection fails the next beat, which reconnects).
                try {
                    give_back_orphaned_claims(*store);
                } catch (const std::exception& error) {
                    spdlog::warn("loader: could not look for orphaned claims: {}", error.what());
                }
            }
        } while (sleep_unless_stopped(stop, timings.heartbeat_every));
    });
}

void Loader::give_back_orphaned_claims(store::ClaimStore& store) {
    const auto& timings = leases_.timings();
    const auto lease = options_.lease + ladder_.step();  // as every claim's (claim_loop)
    // No lease younger than an offer ingest has not ended: its transaction may have committed
    // part of a batch and wait on a locked row for the rest, before it hands the runs over.
    auto age = timings.orphan_age;
    if (const auto oldest = insert_claims_.oldest_open_offer()) {
        age = std::max(age, std::chrono::duration_cast<Milliseconds>(clock_now() - *oldest) +
                                kOpenOfferMargin);
    }
    // Read after the rows, so that a run handed over in between is not taken for an orphan; a
    // run given back in between is given back again, which changes nothing.
    const auto leased = store.claims_older_than(options_.owner, lease, age);
    if (leased.empty()) return;
    const auto orphans = held_.not_held(leased);
    const auto given_back = store.release_orphaned_claims(options_.owner, orphans, lease, age);
    if (given_back == 0) return;
    metrics_.count_orphaned_claims(given_back);
    spdlog::warn("loader: gave back {} runs leased to this instance that it did not hold (a "
                 "commit whose reply was lost)",
                 given_back);
    wake();
}

// One clock (reference §6): due times are compared on PostgreSQL's clock. Each heartbeat measures
// this host's offset to it; the one clock (LoaderOptions::clock) corrects for it, so a host
// whose clock runs ahead does not release early. An offset beyond --max-clock-offset is refused
// at start (cli) and logged here.
void Loader::follow_database_clock(ClockOffset measured) {
    options_.clock->follow(measured);
    const auto offset = measured.offset;
    metrics_.set_clock_offset(offset);
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
