// The loader's claims at insert (reference §6.2): room offered to ingest, and the runs ingest
// leased under it, scheduled with the claimer's next claim (InsertClaimDesk holds them between).
#include "loader/loader.hpp"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace hourglass::loader {

namespace {

std::vector<std::string> ids_of(const std::vector<ClaimedRun>& runs) {
    std::vector<std::string> ids;
    ids.reserve(runs.size());
    for (const auto& run : runs) ids.push_back(run.id);
    return ids;
}

}  // namespace

std::optional<InsertClaimOffer> Loader::offer_insert_claims(std::size_t runs, std::size_t bytes) {
    // A loader whose heartbeat is stale may have lost its claims to another instance.
    if (!leases_.may_publish(seams_.steady_now())) return std::nullopt;
    return insert_claims_.offer(
        InsertClaimOffer{.owner = options_.owner,
                         .lease = options_.lease + ladder_.step(),  // as a claim's: the wait, then `lease`
                         .horizon_end = clock_now() + options_.horizon,
                         .made_at = clock_now()},
        runs, bytes);
}

void Loader::adopt_insert_claims(const InsertClaimOffer& offer, std::vector<ClaimedRun> runs) {
    // Scheduled with the next claim, as one batch, so that the runs of an instant accepted over
    // many small batches count toward a burst as they do when claimed (mark_bursts); at once if
    // one is due before the next regular claim could take it (as wake_for).
    const auto urgent_before = clock_now() + options_.poll_interval + kClaimMargin;
    const bool urgent = std::any_of(runs.begin(), runs.end(),
                                    [&](const ClaimedRun& run) { return run.due_at <= urgent_before; });
    // Held before the offer ends (orphan reconciliation): counted once more by schedule().
    held_.add(ids_of(runs));
    insert_claims_.adopt(offer, std::move(runs));
    claimer_doorbell_.ring(urgent);
}

InsertClaimDesk::Adopted Loader::take_insert_claims(bool stopping) {
    std::vector<std::string> give_back;
    auto taken = insert_claims_.take(stopping, give_back);
    if (!give_back.empty()) {
        to_give_back_.refused(give_back);
        held_.remove(give_back);
    }
    return taken;
}

void Loader::schedule_with_insert_claims(std::vector<ClaimedRun> claimed) {
    auto adopted = take_insert_claims(false);
    metrics_.count_claimed_at_insert(adopted.runs.size());
    const auto adopted_ids = ids_of(adopted.runs);
    claimed.insert(claimed.end(), std::make_move_iterator(adopted.runs.begin()),
                   std::make_move_iterator(adopted.runs.end()));
    schedule(std::move(claimed));
    held_.remove(adopted_ids);  // held since their adoption, and by schedule() now
    // Scheduled, they count as held: their offers' room is no longer reserved.
    board_.end_reservation(adopted.reserved);
}

}  // namespace hourglass::loader
