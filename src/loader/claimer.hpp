// The claimer stage (reference §6.2): on the loader's own thread and a PostgreSQL connection of
// its own, claims the runs due within the horizon into the ScheduleBoard, within the memory
// bounds and the burst plan (BurstPlanner), every poll interval, at once when its doorbell asks,
// and back to back while each claim stops at its limit. It also
//  - schedules the runs ingest leased at insert (InsertClaimDesk) with its next claim, and says
//    when ingest may claim at insert at all;
//  - gives back to the store what the other stages hand it (RunsToGiveBack): runs the broker
//    refused, burst runs over the burst bounds;
//  - sets aside alone each run AMQP cannot carry, and declares the forward ladder before the
//    first targeted run;
//  - forgets everything it holds once the heartbeat found this instance fenced, and gives its
//    own claims back, before the instance registers again;
//  - at a stop, once the other stages ended, gives back what was not published and leaves.
// Takes: the doorbell, runs to give back, insert claims. Gives: scheduled runs (the board).
// Owns: its pacing, the burst plan, the resend rule, the forward ladder's declaration, and the
// runs to give back whose rows another transaction holds.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "common/health.hpp"
#include "common/log_budget.hpp"
#include "common/retry.hpp"
#include "delay/topology.hpp"
#include "hourglass/defaults.hpp"
#include "hourglass/job.hpp"
#include "loader/burst_planner.hpp"
#include "loader/claimer_inbox.hpp"
#include "loader/confirmed_runs.hpp"
#include "loader/held_runs.hpp"
#include "loader/insert_claim_desk.hpp"
#include "loader/lease_keeper.hpp"
#include "loader/loader_metrics.hpp"
#include "loader/resend_rule.hpp"
#include "loader/schedule_board.hpp"
#include "loader/stage_clock.hpp"
#include "store/claim_store.hpp"

namespace hourglass::loader {

// Computes what a run leaves behind once handed over (the next run of a recurring job, whether
// it was missed), when it is claimed (`now`: the claim's time); set by cron.
using NextRunFunction = std::function<AfterHandover(const ClaimedRun&, TimePoint now)>;

class Claimer {
public:
    struct Options {
        std::string owner;
        Milliseconds horizon = kDefaultHorizon;
        Milliseconds poll_interval{500};
        // A claim's lease: the wait in memory before the publish (a ladder step), then --lease.
        Milliseconds claim_lease = kDefaultLease;
        std::size_t claim_batch = 1000;
        std::size_t max_in_memory_runs = 30000;
        // Burst release (BurstPlanner): runs sharing an instant that make a burst, and whether on.
        std::size_t burst_min_runs = 500;
        bool bursts = true;
        std::size_t max_shared_instants = 10000;
        // Unset: runs handed over are never taken for lost (no --resend-after).
        std::optional<Milliseconds> resend_after;
        std::shared_ptr<const health::ServiceHealth> health;  // what the resend rule reads
        // How long a claim waits for the forward ladder's declaration before it gives its
        // targeted runs back for the next claim; whether the start declared it already.
        Milliseconds forward_ladder_wait{2000};
        bool forward_ladder_declared = false;
    };
    // What the claimer takes from, asks and gives to; each outlives it.
    struct Neighbours {
        ScheduleBoard& board;
        InsertClaimDesk& insert_claims;
        RunsToGiveBack& to_give_back;
        ClaimerDoorbell& doorbell;
        HeldRuns& held;
        LeaseKeeper& leases;
        const ConfirmedRuns& confirmed;  // full(): the recorder is far behind, claims wait
        const delay::DelayLadder& ladder;
        LoaderMetrics& metrics;
        // Whether the publisher and the recorder have ended (after a stop).
        std::function<bool()> other_stages_done;
    };
    struct Seams {
        store::OpenClaimStore open_store;
        NextRunFunction next_run;  // empty: no recurring runs
        // Declares the forward ladder (on a connection of its own); throws if it cannot.
        std::function<void()> declare_forward_ladder;
    };

    Claimer(Options options, Neighbours neighbours, Seams seams, StageClock clock);

    // Claims on a store from `seams.open_store(store_options)` until `stop` and the other
    // stages ended; then gives back what is not published and leaves. Reconnects after a failure.
    void run(std::stop_token stop, const store::StoreOptions& store_options);

    // What run() does between its waits, for tests on a manual clock: one round on `store`
    // (forget what a fence took, give back what the others handed over, claim if it is time),
    // and what to do next: claim again at once (a claim stopped at its limit), wait for the next
    // claim or a doorbell, or stop (after `stop`, once the others ended and all is given back).
    // Claims run every poll interval, at once when the doorbell asks, and back to back while
    // each stops at its limit (a hotspot, or memory freed by confirms while one remains).
    enum class Next { claim_again, wait, finished };
    void start_pacing();  // a new connection: the first round claims
    Next round(store::ClaimStore& store, std::stop_token stop);

private:
    // At a stop, how long the claimer waits for ingest to end the offers it took.
    static constexpr auto kInsertClaimsCloseWait = std::chrono::seconds{2};

    // When it claims next: `backlog`, its last claim stopped at a limit, so more may be
    // claimable now.
    struct Pacing {
        std::chrono::steady_clock::time_point next_claim;
        bool backlog = true;
    };
    // Gives back to the store the runs the broker refused and the burst runs deferred, with
    // those whose rows were held before when retry_ says; keeps aside those whose rows another
    // transaction holds. Returns the refused ones.
    std::vector<std::string> give_back_refused(store::ClaimStore& store);
    // Claims and schedules, if it is time (or woken, or a burst cut is a step away), within
    // the memory bounds; not right after the broker refused runs (`refused_just_now`).
    // Returns whether to claim again at once (a backlog).
    bool claim_round(store::ClaimStore& store, Pacing& pacing, bool refused_just_now);
    // Until the next claim, a wake, given-back runs, room for a batch in a backlog, or the
    // other stages ending.
    void wait_for_work(std::stop_token stop, const Pacing& pacing, bool others_done);
    // The runs ingest leased to this loader since the last claim, with the room their offers
    // reserved; gives back instead those leased before the loader forgot its claims, and every
    // run when `stopping`.
    InsertClaimDesk::Adopted take_insert_claims(bool stopping);
    // Schedules `claimed` (a claim's runs) with the runs taken above, as one batch, so that the
    // runs of an instant count toward a burst however they came (mark_bursts).
    void schedule_with_insert_claims(std::vector<ClaimedRun> claimed);
    void schedule(std::vector<ClaimedRun> runs);
    // Makes the runs of a burst among a claim's runs burst runs, as bursts_ plans them against
    // `ledger` (under the board's lock): held until their due time, then published to the
    // release exchange; those the burst bounds cannot hold leave `scheduled` for `deferred`.
    void mark_bursts(std::vector<ScheduledRun>& scheduled, TimePoint now, MemoryLedger& ledger,
                     std::vector<std::string>& deferred);
    // Declares the forward ladder once before the first targeted run of `runs` is published. If
    // that fails, or takes longer than forward_ladder_wait, takes the targeted runs out of
    // `runs`, gives them back to the store (the claim of the next poll looks again) and returns
    // false.
    bool prepare_forward_ladder(std::vector<ClaimedRun>& runs);
    // Takes out of `runs` those AMQP cannot carry (delay::unpublishable_reason) and sets them
    // aside in the store, each alone with its reason: published, one would fail its batch
    // again and again, or make the broker close the connection, and hold up every release.
    void set_aside_unpublishable(store::ClaimStore& store, std::vector<ClaimedRun>& runs);
    void forget_lost_claims(store::ClaimStore& store);
    void finish_claims(store::ClaimStore& store);

    const Options options_;
    Neighbours with_;
    Seams seams_;
    StageClock clock_;
    BurstPlanner bursts_;
    std::optional<ResendRule> resend_rule_;
    bool forward_ladder_declared_;
    std::future<void> forward_ladder_declaration_;  // while one is under way
    LogBudget forward_ladder_log_{1, std::chrono::minutes{1}};
    Pacing pacing_;
    bool others_done_ = false;  // at the last round
    // Runs to give back whose rows another transaction holds: given back when retry_ says,
    // and meanwhile claimed by nobody else (this instance's lease), nor held up by anything.
    std::vector<std::string> held_give_backs_;
    LockedRowsRetry retry_;
};

}  // namespace hourglass::loader
