// The loader (reference §6.2): claims runs due within the horizon from PostgreSQL and hands each
// to the delay topology with publisher confirms; a run is recorded as handed over only after
// the broker confirmed it.
//
// Threads of their own, so that database round trips never delay a publish, nor a claim a
// record:
//  - the claimer (PostgreSQL) claims runs into an in-memory schedule (bounded by count and
//    bytes) every poll interval, at once when woken, and back to back while each claim stops
//    at its limit of runs or bytes (then also as confirms free memory);
//  - the recorder (PostgreSQL, its own connection) marks confirmed runs `enqueued` in batches,
//    once the oldest has waited 50 ms or a claim batch of them is ready: in a hotspot it
//    records one batch while the claimer claims the next;
//  - the publisher (RabbitMQ) publishes each run at `due - ttl` into the TTL queue chosen by
//    the DelayLadder, turning through the rung's lanes, with a bounded window of unconfirmed
//    publishes; a burst run at `due` to the release exchange or the forward queue
//    (kDefaultMaxBurstRuns).
//  - the heartbeat (PostgreSQL) keeps this instance's claims alive (live leases, reference §6; see
//    lease_keeper.hpp) and gives back the claims of instances that stopped beating.
// wake() makes the claimer look at once (another instance's claims to take over); wake_for(due)
// does so only when the next regular claim might come too late for a job accepted due then.
#pragma once

#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "amqp/confirm_tracker.hpp"
#include "amqp/connection.hpp"
#include "common/log_budget.hpp"
#include "common/retry.hpp"
#include "common/thread_priority.hpp"
#include "delay/release_messages.hpp"
#include "delay/topology.hpp"
#include "hourglass/job.hpp"
#include "common/database_clock.hpp"
#include "common/health.hpp"
#include "loader/resend_rule.hpp"
#include "common/metrics.hpp"
#include "loader/burst_planner.hpp"
#include "loader/claimer_inbox.hpp"
#include "loader/confirmed_runs.hpp"
#include "loader/held_runs.hpp"
#include "loader/insert_claim_desk.hpp"
#include "loader/lease_keeper.hpp"
#include "loader/loader_metrics.hpp"
#include "loader/memory_ledger.hpp"
#include "loader/release_channel.hpp"
#include "loader/schedule_board.hpp"
#include "loader/scheduled_run.hpp"
#include "store/claim_store.hpp"
#include "store/store_options.hpp"

namespace hourglass::loader {

// Publishes awaiting a broker confirm, per instance (--max-unconfirmed). 4,096 rather than 256:
// a hotspot of 100,000 was handed over faster in five of six alternating pairs on RabbitMQ
// 4.3.6 and in three of three on 3.10.8 (bench/journal/2026-11-22-to-12-04.md "The loader's confirm window").
// Memory stays bounded by max_in_memory_bytes, which counts the runs in flight.
inline constexpr std::size_t kDefaultMaxUnconfirmed = 4096;
// Claimed runs waiting for their publish time or a confirm (--max-in-memory-runs). Every run of
// a burst waits for the same 1 s rung, so this is also the hand-over rate of a hotspot, a
// second: 30,000 lets a 5 s horizon carry 100,000 due at one instant (20,000 did not), at an
// RSS peak of 62-71 MB; 50,000 reached 107-130 MB (bench/journal/2026-11-22-to-12-04.md).
inline constexpr std::size_t kDefaultMaxInMemoryRuns = 30000;
// Burst release. RabbitMQ dead-letters without flow control: every delay queue holding a burst
// expires its share at once, and a consumer's queue that receives such a flood faster than it
// delivers falls behind for the whole burst (three times slower on RabbitMQ 4.3 than on 3.10;
// bench/journal/2026-11-22-to-12-04.md). The loader's own publishes to that queue are paced by the broker's
// credit flow instead. So the runs of an instant shared by at least kBurstMinRuns runs
// (one-shot or recurring), claimed at once or over several claims (a hotspot), are held in memory until
// their due time and published straight to the release exchange (targeted runs: to the
// forward queue, whose forwarder then publishes them to their targets), up to
// --max-burst-runs of them and kMaxBurstBytes of their bodies and properties, on top of the
// bounds above. The rest of a burst stays in the store until a ladder step before its
// instant: part of a burst through the delay queues floods the consumer's queue as much as
// all of it. 100,000 due at one instant drained in 5.02 s against 7.40 s through the delay
// queues on RabbitMQ 4.3.6 (medians, bench/journal/2026-11-22-to-12-04.md "Burst release").
inline constexpr std::size_t kDefaultMaxBurstRuns = 20000;
inline constexpr std::size_t kMaxBurstBytes = 16u << 20;
inline constexpr std::size_t kBurstMinRuns = 500;
// Instants whose runs a burst may be counted over several claims (a hotspot scheduled within
// the horizon): under 1 MB, far more instants than a horizon holds bursts.
inline constexpr std::size_t kMaxSharedInstants = 10000;

struct LoaderOptions {
    amqp::ConnectionOptions amqp;
    store::StoreOptions store;
    delay::TopologyOptions topology;
    Milliseconds horizon{60000};
    Milliseconds poll_interval{500};
    Milliseconds lease{30000};
    // Publish a one-shot run again when its release is still not observed this long after its
    // due time: the broker lost it (a classic queue dead-letters at most once, so a run that
    // expires while the broker shuts down can vanish). Unset: never (needs the audit).
    std::optional<Milliseconds> resend_after;
    // False with --no-audit: the runs this loader hands over are recorded as unaudited, so that
    // an instance with the audit never takes them for lost runs and re-sends them.
    bool releases_observed = true;
    // --realtime-publisher: the publisher thread asks for SCHED_FIFO (common/thread_priority.hpp).
    RealtimeMode realtime_publisher = RealtimeMode::automatic;
    std::size_t claim_batch = 1000;
    std::size_t max_unconfirmed = kDefaultMaxUnconfirmed;
    std::size_t max_in_memory_runs = kDefaultMaxInMemoryRuns;
    std::size_t max_in_memory_bytes = 64u << 20;
    // Burst release (above); 0 turns it off.
    std::size_t max_burst_runs = kDefaultMaxBurstRuns;
    std::size_t max_burst_bytes = kMaxBurstBytes;
    std::size_t burst_min_runs = kBurstMinRuns;
    std::string owner;  // lease owner id, unique per process
    LeaseTimings lease_timings;
    // A clock further than this from PostgreSQL's is reported (and refused at start).
    Milliseconds max_clock_offset{1000};
    // How long a claim waits for the forward ladder's declaration (LoaderSeams) before it gives
    // its targeted runs back for the next claim; the declaration goes on meanwhile.
    Milliseconds forward_ladder_wait{2000};
    std::shared_ptr<metrics::ServiceMetrics> metrics = std::make_shared<metrics::ServiceMetrics>();
    // Whether the audit is connected (runs count as lost only while it records releases).
    std::shared_ptr<const health::ServiceHealth> health =
        std::make_shared<health::ServiceHealth>(metrics);
    // The one clock (reference §6): the heartbeat follows PostgreSQL's clock on it.
    std::shared_ptr<DatabaseClock> clock = std::make_shared<DatabaseClock>();
};

// What the loader reaches outside itself. Every member left empty means the real thing
// (store::JobStore, an AMQP channel, LoaderOptions::clock); unit tests inject fakes.
struct LoaderSeams {
    // One store per thread (claimer, recorder, heartbeat), each with its own connection.
    std::function<std::unique_ptr<store::ClaimStore>(const store::StoreOptions&)> open_store;
    std::function<std::unique_ptr<ReleaseChannel>()> open_channel;
    // The one clock (reference §6): due times are compared on it.
    std::function<std::chrono::sys_time<std::chrono::microseconds>()> now;
    // The monotonic clock of heartbeats and leases.
    std::function<std::chrono::steady_clock::time_point()> steady_now;
    // Puts the calling (publisher) thread under real-time scheduling; 0 or an errno.
    std::function<int()> make_publisher_realtime;
    // Declares the forward ladder (delay::declare_forward_ladder, on a connection of its own);
    // throws if it cannot. Called by the claimer before the first targeted run is scheduled,
    // unless options.topology.forward_ladder says the start declared it.
    std::function<void()> declare_forward_ladder;
};

// Computes what a run leaves behind once handed over (the next run of a recurring job, whether
// it was missed), when it is claimed (`now`: the claim's time); set by cron.
using NextRunFunction = std::function<AfterHandover(const ClaimedRun&, TimePoint now)>;

class Loader {
public:
    Loader(LoaderOptions options, NextRunFunction next_run = {}, LoaderSeams seams = {});
    ~Loader();
    Loader(const Loader&) = delete;
    Loader& operator=(const Loader&) = delete;

    // Runs its threads until `stop`; then publishes nothing more, waits (bounded) for
    // outstanding confirms, records them and gives back unpublished claims.
    void run(std::stop_token stop);
    void wake();
    void wake_for(TimePoint due);

    // Claims at insert (InsertClaimOffer), called by ingest. Room for up to `runs` runs and
    // `bytes` of their bodies and properties, reserved until adopt_insert_claims; none while
    // the loader is not claiming (stopping, out of touch with PostgreSQL or its heartbeat), has
    // due runs waiting in the store for room (they go first), or holds part of a burst back in
    // the store. Ingest leases to it the jobs it inserts due by the offer's horizon_end.
    std::optional<InsertClaimOffer> offer_insert_claims(std::size_t runs, std::size_t bytes);
    // The runs ingest inserted leased under `offer` (none if its transaction failed): the
    // claimer schedules them as if it had claimed them, or gives them back if it forgot its
    // claims since the offer. Ends the offer's reservation.
    void adopt_insert_claims(const InsertClaimOffer& offer, std::vector<ClaimedRun> runs);

    // Figures for metrics and tests.
    std::size_t in_memory_runs() const;
    std::uint64_t runs_handed_over() const noexcept { return handed_over_total_.load(); }

private:
    // While publishes await confirms the publisher polls the socket this often at most.
    static constexpr auto kConfirmPoll = std::chrono::microseconds{1000};
    static constexpr auto kIdleWait = Milliseconds{100};
    static constexpr auto kShutdownConfirmWait = std::chrono::seconds{5};
    // A job accepted due sooner than the next regular claim plus this wakes the claimer. Later
    // ones wait for that claim: a run claimed later only goes to a lower rung of the ladder, while
    // claiming after every commit and confirm made 10,622 claim queries in a steady 1,000 jobs/s
    // run of 60 s (305 now), on the CPU the publisher needs.
    static constexpr auto kClaimMargin = Milliseconds{1000};
    // Confirmed runs are recorded together once the oldest has waited this long (or a claim batch
    // of them is ready): one UPDATE per confirm made 9,848 in that run (1,555 now). It
    // only widens the window in which a crash can cause a duplicate (reference §6, at least once).
    static constexpr auto kRecordEvery = Milliseconds{50};
    // The one clock is PostgreSQL's within a round trip: an offer's time, and so the age of
    // the leases under it, is known to within this (orphan reconciliation).
    static constexpr auto kOpenOfferMargin = Milliseconds{1000};
    // At a stop, how long the claimer waits for ingest to end the offers it took.
    static constexpr auto kInsertClaimsCloseWait = std::chrono::seconds{2};

    // Publishes awaiting their confirm (publisher thread).
    using InFlight = amqp::ConfirmTracker<ScheduledRun>;

    void claim_loop(std::stop_token stop);
    // When the claimer claims next (claimer thread): `backlog`, its last claim stopped at a
    // limit, so more may be claimable now.
    struct ClaimPacing {
        std::chrono::steady_clock::time_point next_claim;
        bool backlog = true;
    };
    // Gives back to the store the runs the broker refused (to_give_back_) and the burst runs
    // deferred, with those whose rows were held before when `retry` says; keeps in
    // `held_give_backs` those whose rows another transaction holds. Returns the refused ones.
    std::vector<std::string> give_back_refused(store::ClaimStore& store,
                                               std::vector<std::string>& held_give_backs,
                                               LockedRowsRetry& retry);
    // Claims and schedules, if it is time (or woken, or a burst cut is a step away), within
    // the memory bounds; not right after the broker refused runs (`refused_just_now`).
    // Returns whether to claim again at once (a backlog).
    bool claim_round(store::ClaimStore& store, ClaimPacing& pacing, bool refused_just_now);
    // Until the next claim, a wake, given-back runs, room for a batch in a backlog, or the
    // other threads ending.
    void wait_for_claim_work(std::stop_token stop, const ClaimPacing& pacing, bool threads_done);
    // Claims at insert (claimer thread). Takes the runs ingest leased to this loader since the
    // last claim, with the room their offers reserved; gives back instead those leased before
    // the loader forgot its claims, and every run when `stopping`.
    InsertClaimDesk::Adopted take_insert_claims(bool stopping);
    // Schedules `claimed` (a claim's runs) with the runs taken above, as one batch, so that the
    // runs of an instant count toward a burst however they came (mark_bursts).
    void schedule_with_insert_claims(std::vector<ClaimedRun> claimed);
    void record_loop(std::stop_token stop);
    // Makes the runs of a burst among a claim's runs burst runs, as bursts_ plans them against
    // `ledger` (under the board's lock): held until their due time, then published to the
    // release exchange; those the burst bounds cannot hold leave `scheduled` for `deferred`.
    void mark_bursts(std::vector<ScheduledRun>& scheduled, TimePoint now, MemoryLedger& ledger,
                     std::vector<std::string>& deferred);
    void heartbeat_loop(std::stop_token stop);
    // Gives back the runs leased to this instance by claims older than the orphan age that it
    // does not hold (held_): a commit whose reply was lost (heartbeat thread).
    void give_back_orphaned_claims(store::ClaimStore& store);
    // Ends the runs of `handed_over` recorded (all but those `left`) in held_.
    void forget_recorded(const std::vector<HandedOverRun>& handed_over,
                         const std::vector<HandedOverRun>& left);
    void forget_lost_claims(store::ClaimStore& store);
    void follow_database_clock(ClockOffset measured);
    // Asks for real-time scheduling of the calling publisher thread, as --realtime-publisher says.
    void make_publisher_realtime();
    void publish_loop(std::stop_token stop);
    // One connection's publishing (publisher thread): take the runs due, publish them, wait
    // for confirms or the next run; on a failure, what is unconfirmed goes back to the store.
    void publish_session(std::stop_token stop);
    // The runs due now (within the confirm window), and when to look again.
    struct DueBatch {
        std::vector<ScheduledRun> runs;
        TimePoint now{};  // the batch's one instant: its TTLs and groups are taken at it
        TimePoint next_publish{};
        bool window_full = false;  // max_unconfirmed publishes await confirms
    };
    DueBatch take_due(std::stop_token stop);
    void publish_batch(ReleaseChannel& channel, DueBatch& batch, unsigned& next_lane,
                       InFlight& in_flight);
    void await_confirms_or_runs(std::stop_token stop, ReleaseChannel& channel,
                                const DueBatch& batch, InFlight& in_flight,
                                LogBudget& release_nack_log);
    // A confirm (ack or nack) for the publishes up to its sequence: acked runs go to the
    // recorder, refused ones back to the store.
    void settle_confirm(InFlight& in_flight, const amqp::Confirm& confirm, LogBudget& release_nack_log);
    // Sets observed_with of the runs of `batch` that a release group observes with another
    // (delay::ReleaseMessages::group).
    void group_releases(std::vector<ScheduledRun>& batch, TimePoint now, unsigned first_lane) const;
    // Declares the forward ladder once before the first targeted run of `runs` is published. If
    // that fails, or takes longer than forward_ladder_wait, takes the targeted runs out of
    // `runs`, gives them back to the store (the claim of the next poll looks again) and returns
    // false. Claimer thread.
    bool prepare_forward_ladder(std::vector<ClaimedRun>& runs);
    // Takes out of `runs` those AMQP cannot carry (delay::unpublishable_reason) and sets them
    // aside in the store, each alone with its reason: published, one would fail its batch
    // again and again, or make the broker close the connection, and hold up every release.
    // Claimer thread.
    void set_aside_unpublishable(store::ClaimStore& store, std::vector<ClaimedRun>& runs);
    void schedule(std::vector<ClaimedRun> runs);
    // Gives back runs published but refused, or maybe not received, to the store (the claimer
    // does, at once), and forgets them.
    void give_back(const std::vector<InFlight::Settled>& runs);
    void finish_claims(store::ClaimStore& store);
    // The publisher and the recorder have ended (after `stop`).
    bool other_threads_done() const { return confirmed_.closed() && recorder_done_; }
    TimePoint clock_now() const { return std::chrono::time_point_cast<Milliseconds>(seams_.now()); }

    LoaderOptions options_;
    NextRunFunction next_run_;
    LoaderSeams seams_;
    LeaseKeeper leases_;
    HeldRuns held_;  // every run from its schedule to its record (reconciliation)
    LoaderMetrics metrics_;
    bool clock_offset_reported_ = false;  // heartbeat thread only
    // Claimer thread only: the forward ladder's state, and its declaration while one is under way.
    bool forward_ladder_declared_;
    std::future<void> forward_ladder_declaration_;
    LogBudget forward_ladder_log_{1, std::chrono::minutes{1}};
    delay::DelayLadder ladder_;
    delay::ReleaseMessages release_messages_;

    // The hand-offs between the threads, each with its own lock (see their headers). Which
    // thread touches what is theirs to say; the rest of the loader's fields are one thread's.
    ScheduleBoard board_;                    // claimer, ingest's offers -> publisher
    InsertClaimDesk insert_claims_{board_};  // ingest <-> claimer
    ConfirmedRuns confirmed_;                // publisher -> recorder
    RunsToGiveBack to_give_back_;            // publisher, ingest, claimer -> claimer
    ClaimerDoorbell claimer_doorbell_;       // every thread -> claimer
    // Claimer thread only: which runs of a claim are burst runs, and the burst cut.
    BurstPlanner bursts_;
    std::atomic<bool> recorder_done_{false};  // every confirmed run recorded after the publisher stopped
    std::atomic<std::uint64_t> handed_over_total_{0};
    // Claimer thread only: when a run handed over counts as lost (unset without --resend-after).
    std::optional<ResendRule> resend_rule_;
};

}  // namespace hourglass::loader
