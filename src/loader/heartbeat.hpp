// The heartbeat stage (reference §6 "Live leases"; docs/architecture.md "Fencing"): on a thread
// and a PostgreSQL connection of its own, about once a second it
//  - beats: records that this instance is alive, and reports each beat that committed to the
//    LeaseKeeper, with the instant it was sent (the publisher asks the keeper before every
//    publish); a beat that finds this instance fenced reports the registration lost, and the
//    claimer drops what it holds; registers again once the claimer has;
//  - fences instances that stopped beating and gives their claims back (in the beat's
//    transaction, heartbeat.sql), then wakes the claimer to take them at once;
//  - every reconcile_every, gives back the runs leased to this instance that it does not hold
//    (HeldRuns): a claim whose commit reply was lost;
//  - follows PostgreSQL's clock: each beat measures the offset and the one clock (DatabaseClock)
//    follows it.
// Takes: the LeaseKeeper it feeds, HeldRuns and the insert-claim desk it reads, the claimer's
// doorbell it rings. Owns: whether it is registered, when it reconciles next, whether an offset
// beyond the bound was reported.
#pragma once

#include <memory>
#include <stop_token>
#include <string>

#include "common/database_clock.hpp"
#include "hourglass/defaults.hpp"
#include "loader/claimer_inbox.hpp"
#include "loader/held_runs.hpp"
#include "loader/insert_claim_desk.hpp"
#include "loader/lease_keeper.hpp"
#include "loader/loader_metrics.hpp"
#include "loader/stage_clock.hpp"
#include "store/claim_store.hpp"
#include "store/store_options.hpp"

namespace hourglass::loader {

class Heartbeat {
public:
    struct Options {
        std::string owner;  // this instance's lease owner id
        // A claim's lease (as the claimer takes it): a lease older than it by the orphan age
        // came from a claim that long ago.
        Milliseconds claim_lease = kDefaultLease;
        // An offset to PostgreSQL's clock beyond this is logged (and refused at start, cli).
        Milliseconds max_clock_offset = kDefaultMaxClockOffset;
    };
    // What the heartbeat feeds and reads; each outlives it.
    struct Neighbours {
        LeaseKeeper& leases;
        const HeldRuns& held;
        const InsertClaimDesk& insert_claims;
        ClaimerDoorbell& claimer;
        LoaderMetrics& metrics;
        DatabaseClock& database_clock;  // follows the offsets it measures
    };

    Heartbeat(Options options, Neighbours neighbours, StageClock clock);

    // Beats every heartbeat_every on a store from `open_store` until `stop`, reconnecting after
    // a failure (a beat that fails is simply late: the keeper decides what that means).
    void run(std::stop_token stop, const store::OpenClaimStore& open_store, const store::StoreOptions& store_options);
    // One round on `store`: registers if it may, beats, follows the clock, and reconciles once
    // reconcile_every has passed on the steady clock. Throws what the store throws.
    void beat(store::ClaimStore& store);

private:
    void give_back_orphaned_claims(store::ClaimStore& store);
    void follow_database_clock(ClockOffset measured);

    // At the instant the offer's time is known to within a round trip: the age of the leases
    // under an open offer is known to within this (orphan reconciliation).
    static constexpr auto kOpenOfferMargin = Milliseconds{1000};

    const Options options_;
    Neighbours with_;
    StageClock clock_;
    bool registered_ = false;  // kept across reconnects: a beat that finds no row was fenced
    std::chrono::steady_clock::time_point next_reconcile_{};
    bool clock_offset_reported_ = false;
};

}  // namespace hourglass::loader
