// What the loader needs from the store: claims, hand-overs and live leases (SPEC §5).
// store::JobStore implements it over PostgreSQL; unit tests of the loader give it a fake, so
// lease renewal, takeover and give-back decisions are tested without a database.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "hourglass/job.hpp"
#include "hourglass/time.hpp"

namespace hourglass::store {

class ClaimStore {
public:
    virtual ~ClaimStore() = default;

    // Claims up to `limit` pending runs due at or before `horizon_end` for `owner` (see
    // JobStore::claim_due for who may take which run).
    virtual std::vector<ClaimedRun> claim_due(const std::string& owner, TimePoint horizon_end,
                                              std::size_t limit, Milliseconds lease,
                                              std::optional<TimePoint> resend_due_before) = 0;
    // Records runs the broker confirmed; only runs still leased to `owner` change. A run
    // observed with another whose release was already recorded ends `done` at once.
    virtual void record_handed_over(const std::string& owner,
                                    const std::vector<HandedOverRun>& runs) = 0;
    // Gives back claimed runs that were not published, so that any instance claims them.
    virtual void release_claims(const std::string& owner, const std::vector<std::string>& ids) = 0;
    // Records that `owner` is alive; forgets instances silent for `takeover_after` and gives
    // their claims back; returns the instances found dead.
    virtual std::vector<std::string> heartbeat(const std::string& owner,
                                               Milliseconds takeover_after) = 0;
    // The store's clock minus this host's, never overestimated (see JobStore).
    virtual std::chrono::microseconds measure_clock_offset() = 0;
    // Gives back every claim `owner` still holds.
    virtual void release_all_claims(const std::string& owner) = 0;
    // Unregisters `owner` (a clean stop).
    virtual void leave(const std::string& owner) = 0;
};

}  // namespace hourglass::store
