// The loader's claims at insert (reference §6.2): room offered to ingest, and the runs ingest
// leased under it, scheduled with the claimer's next claim.
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

std::optional<InsertClaimOffer> Loader::offer_insert_claims(std::size_t runs, std::size_t bytes) {
    if (runs == 0 || bytes == 0) return std::nullopt;
    // A loader whose heartbeat is stale may have lost its claims to another instance.
    if (!leases_.may_publish(seams_.steady_now())) return std::nullopt;
    const auto now = clock_now();
    std::lock_guard lock(mutex_);
    if (!insert_claims_open_) return std::nullopt;
    InsertClaimOffer offer{
        .owner = options_.owner,
        .lease = options_.lease + ladder_.step(),  // as a claim's: the wait, then `lease`
        .horizon_end = now + options_.horizon,
        .runs = std::min(runs, claim_capacity()),
        .bytes = std::min(bytes, ledger_.claim_bytes()),
        .epoch = claims_epoch_};
    if (offer.runs == 0 || offer.bytes == 0) return std::nullopt;
    ledger_.reserve(offer.runs, offer.bytes);
    ++open_offers_;
    return offer;
}

void Loader::adopt_insert_claims(const InsertClaimOffer& offer, std::vector<ClaimedRun> runs) {
    // Scheduled with the next claim, as one batch, so that the runs of an instant accepted over
    // many small batches count toward a burst as they do when claimed (mark_bursts); at once if
    // one is due before the next regular claim could take it (as wake_for).
    const auto urgent_before = clock_now() + options_.poll_interval + kClaimMargin;
    const bool urgent = std::any_of(runs.begin(), runs.end(),
                                    [&](const ClaimedRun& run) { return run.due_at <= urgent_before; });
    {
        std::lock_guard lock(mutex_);
        open_offers_ -= std::min<std::size_t>(open_offers_, 1);
        if (runs.empty()) {
            ledger_.end_reservation(offer.runs, offer.bytes);
        } else {
            adopted_.push_back(AdoptedClaims{.epoch = offer.epoch,
                                             .reserved_runs = offer.runs,
                                             .reserved_bytes = offer.bytes,
                                             .runs = std::move(runs)});
        }
        if (urgent) wake_requested_ = true;
    }
    claimer_wake_.notify_one();  // also for a stop that waits for the offer (close_insert_claims)
}

Loader::AdoptedClaims Loader::take_insert_claims(bool stopping) {
    std::vector<AdoptedClaims> adopted;
    {
        std::lock_guard lock(mutex_);
        adopted.swap(adopted_);
    }
    AdoptedClaims taken;
    std::lock_guard lock(mutex_);
    for (auto& claims : adopted) {
        if (claims.epoch == claims_epoch_ && !stopping) {
            taken.reserved_runs += claims.reserved_runs;
            taken.reserved_bytes += claims.reserved_bytes;
            std::move(claims.runs.begin(), claims.runs.end(), std::back_inserter(taken.runs));
            continue;
        }
        // Leased before the loader forgot its claims (others may have taken them over), or
        // while it stops: given back for any instance to claim.
        for (const auto& run : claims.runs) given_back_.push_back(run.id);
        ledger_.end_reservation(claims.reserved_runs, claims.reserved_bytes);
    }
    return taken;
}

void Loader::schedule_with_insert_claims(std::vector<ClaimedRun> claimed) {
    auto adopted = take_insert_claims(false);
    metrics_.count_claimed_at_insert(adopted.runs.size());
    claimed.insert(claimed.end(), std::make_move_iterator(adopted.runs.begin()),
                   std::make_move_iterator(adopted.runs.end()));
    schedule(std::move(claimed));
    // Scheduled, they count as held: their offers' room is no longer reserved.
    std::lock_guard lock(mutex_);
    ledger_.end_reservation(adopted.reserved_runs, adopted.reserved_bytes);
}

void Loader::close_insert_claims() {
    std::unique_lock lock(mutex_);
    insert_claims_open_ = false;
    // An ingest transaction lasts milliseconds; one that hangs longer leaves its runs leased
    // to this instance, taken over once the lease ends.
    claimer_wake_.wait_for(lock, std::chrono::seconds{2}, [&] { return open_offers_ == 0; });
}

}  // namespace hourglass::loader
