// What the loader needs from the store: claims, hand-overs and live leases (reference §6).
// store::JobStore implements it over PostgreSQL; unit tests of the loader give it a fake, so
// lease renewal, takeover and give-back decisions are tested without a database.
#pragma once

#include <memory>

#include "store/store_options.hpp"

#include <chrono>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/database_clock.hpp"
#include "hourglass/job.hpp"
#include "hourglass/time.hpp"

namespace hourglass::store {

// How much one claim may take: a number of runs, and bytes of their bodies and properties
// (as PostgreSQL stores them). A claim stops before the first run the bytes of the runs before
// it reach the budget, so it takes at least one run and exceeds the budget by one run at most.
struct ClaimLimit {
    std::size_t runs = 1000;
    std::size_t bytes = std::numeric_limits<std::size_t>::max();
};

// What one claim took; `at_limit`: it stopped at a limit, so more may be claimable now.
struct Claim {
    std::vector<ClaimedRun> runs;
    bool at_limit = false;
};

class ClaimStore {
public:
    virtual ~ClaimStore() = default;

    // Claims pending runs due at or before `horizon_end` for `owner`, within `limit`, earliest
    // first (see JobStore::claim_due for who may take which run). Takes the runs another
    // instance leased only once that instance is fenced or gone (heartbeat, leave).
    virtual Claim claim_due(const std::string& owner, TimePoint horizon_end, ClaimLimit limit,
                            Milliseconds lease, std::optional<TimePoint> resend_due_before) = 0;
    // Records runs the broker confirmed; only runs still leased to `owner` change. A run
    // observed with another whose release was already recorded ends `done` at once. Never waits
    // for a row lock: returns the runs it left because another transaction holds their row (or
    // the row of the run they are observed with), for the caller to record later.
    virtual std::vector<HandedOverRun> record_handed_over(
        const std::string& owner, const std::vector<HandedOverRun>& runs) = 0;
    // Gives back claimed runs that were not published, so that any instance claims them.
    // Returns the ids it left because another transaction holds their rows (see
    // record_handed_over), for the caller to give back later.
    virtual std::vector<std::string> release_claims(const std::string& owner,
                                                    const std::vector<std::string>& ids) = 0;
    // Runs `owner` claimed that cannot be published (a value AMQP cannot carry): each still
    // leased to it ends `cancelled`, its reason kept in hourglass.rejections.
    struct SetAsideRun {
        std::string id;
        std::string routing_key;
        std::string reason;
    };
    virtual void set_aside(const std::string& owner, const std::vector<SetAsideRun>& runs) = 0;
    // Registers `owner` as a live instance (live leases): from now on its heartbeats renew it.
    virtual void register_instance(const std::string& owner) = 0;
    // Records that `owner` is alive, if it is still registered (`registered` false: another
    // instance took it for dead, deleted its registration and gave its claims back; it must
    // drop what it holds and register again). Once it has itself beaten without a break for
    // `fresh_within` (each beat within `fresh_within` of the one before: it is not just back
    // from a stall, after which the others' beats may still be on their way), fences
    // the instances silent for `takeover_after` and gives their claims back (`dead`), in one
    // transaction: the one place a run is taken from a registered owner (docs/architecture.md
    // "Fencing"). Never waits for a lock on another instance's registration.
    struct Heartbeat {
        bool registered = false;
        std::vector<std::string> dead;
    };
    virtual Heartbeat heartbeat(const std::string& owner, Milliseconds takeover_after,
                                Milliseconds fresh_within) = 0;
    // Orphaned claims: the runs leased to `owner` by a claim (or an insert) made more than
    // `age` ago, `lease` being the lease that claim was given (its lease_until is then older
    // than now + lease - age). A lost commit reply leaves such rows leased to a live owner
    // that does not know of them.
    virtual std::vector<std::string> claims_older_than(const std::string& owner, Milliseconds lease,
                                                       Milliseconds age) = 0;
    // Gives back those of `ids` still leased to `owner` by a claim older than `age` (as
    // above), so that a run claimed again meanwhile is never given back; returns their count.
    // Never waits for a row another transaction holds: passes it by (the heartbeat calls it).
    virtual std::size_t release_orphaned_claims(const std::string& owner,
                                                const std::vector<std::string>& ids,
                                                Milliseconds lease, Milliseconds age) = 0;
    // The store's clock minus this host's, never overestimated, and the round trip that bounds
    // its error (see JobStore).
    virtual ClockOffset measure_clock_offset() = 0;
    // Gives back every claim `owner` still holds.
    virtual void release_all_claims(const std::string& owner) = 0;
    // Unregisters `owner` (a clean stop).
    virtual void leave(const std::string& owner) = 0;
};

// The store the loader uses, over a connection of its own (throws when PostgreSQL is out of reach).
std::unique_ptr<ClaimStore> open_claim_store(const StoreOptions& options);
// How a loader stage opens its store (open_claim_store, or a unit test's fake).
using OpenClaimStore = std::function<std::unique_ptr<ClaimStore>(const StoreOptions&)>;

}  // namespace hourglass::store
