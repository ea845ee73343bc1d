// The loader (reference §6.2): claims runs due within the horizon from PostgreSQL and hands each
// to the delay topology with publisher confirms; a run is recorded as handed over only after
// the broker confirmed it. It only wires four stages, each a type with its own header, state
// and clock, meeting through typed hand-offs, so that database round trips never delay a
// publish, nor a claim a record:
//  - the Claimer (claimer.hpp; PostgreSQL) claims runs into the ScheduleBoard, bounded by count
//    and bytes, and gives back what the others hand it;
//  - the Publisher (publisher.hpp; RabbitMQ) publishes each run at its instant into its delay
//    queue, or a burst run at its due time, with a bounded window of unconfirmed publishes;
//  - the Recorder (recorder.hpp; PostgreSQL) records confirmed runs `enqueued` in batches;
//  - the Heartbeat (heartbeat.hpp; PostgreSQL) keeps this instance's claims alive (live
//    leases, lease_keeper.hpp), fences silent instances and reconciles orphaned claims.
// wake() makes the claimer look at once (another instance's claims to take over); wake_for(due)
// does so only when the next regular claim might come too late for a job accepted due then.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "amqp/connection.hpp"
#include "common/database_clock.hpp"
#include "common/health.hpp"
#include "common/metrics.hpp"
#include "common/thread_priority.hpp"
#include "delay/release_messages.hpp"
#include "delay/topology.hpp"
#include "hourglass/defaults.hpp"
#include "hourglass/job.hpp"
#include "loader/claimer.hpp"
#include "loader/claimer_inbox.hpp"
#include "loader/confirmed_runs.hpp"
#include "loader/heartbeat.hpp"
#include "loader/held_runs.hpp"
#include "loader/insert_claim_desk.hpp"
#include "loader/lease_keeper.hpp"
#include "loader/loader_metrics.hpp"
#include "loader/publisher.hpp"
#include "loader/recorder.hpp"
#include "loader/release_channel.hpp"
#include "loader/schedule_board.hpp"
#include "loader/stage_clock.hpp"
#include "store/claim_store.hpp"
#include "store/store_options.hpp"

namespace hourglass::loader {

// Publishes awaiting a broker confirm, per instance (--max-unconfirmed). 4,096 rather than 256:
// a hotspot of 100,000 was handed over faster in five of six alternating pairs on RabbitMQ
// 4.3.6 and in three of three on 3.10.8 (bench/journal/2026-11-22-to-12-04.md "The loader's confirm window").
// Memory stays bounded by max_in_memory_bytes, which counts the runs in flight.
inline constexpr std::size_t kDefaultMaxUnconfirmed = 4096;
// A hand-over awaiting the broker's confirm longer than this means the broker is busy: runs
// are then held for a near rung (--slow-confirm, loader/handover_pace.hpp). An idle broker
// confirms within 10 ms on this project's 2-core machines; a saturated one took 50 to 200 ms
// (bench/journal/2026-12-07-what-bounds-the-sweep.md).
inline constexpr Milliseconds kDefaultSlowConfirm{20};
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
    Milliseconds horizon = kDefaultHorizon;
    Milliseconds poll_interval{500};
    Milliseconds lease = kDefaultLease;
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
    // Unset: runs are always handed over a horizon ahead (--slow-confirm off).
    std::optional<Milliseconds> slow_confirm = kDefaultSlowConfirm;
    std::size_t max_in_memory_runs = kDefaultMaxInMemoryRuns;
    std::size_t max_in_memory_bytes = 64u << 20;
    // Burst release (above); 0 turns it off.
    std::size_t max_burst_runs = kDefaultMaxBurstRuns;
    std::size_t max_burst_bytes = kMaxBurstBytes;
    std::size_t burst_min_runs = kBurstMinRuns;
    std::string owner;  // lease owner id, unique per process
    LeaseTimings lease_timings;
    // A clock further than this from PostgreSQL's is reported (and refused at start).
    Milliseconds max_clock_offset = kDefaultMaxClockOffset;
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
    store::OpenClaimStore open_store;
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
    std::uint64_t runs_handed_over() const noexcept { return recorder_.runs_recorded(); }

private:
    // How often an idle recorder looks again.
    static constexpr auto kIdleWait = Milliseconds{100};
    // A job accepted due sooner than the next regular claim plus this wakes the claimer. Later
    // ones wait for that claim: a run claimed later only goes to a lower rung of the ladder, while
    // claiming after every commit and confirm made 10,622 claim queries in a steady 1,000 jobs/s
    // run of 60 s (305 now), on the CPU the publisher needs.
    static constexpr auto kClaimMargin = Milliseconds{1000};
    // Confirmed runs are recorded together once the oldest has waited this long (or a claim batch
    // of them is ready): one UPDATE per confirm made 9,848 in that run (1,555 now). It
    // only widens the window in which a crash can cause a duplicate (reference §6, at least once).
    static constexpr auto kRecordEvery = Milliseconds{50};

    // The store options of the loader's connections: each session named after this instance
    // (StoreOptions::session_owner).
    store::StoreOptions named_store_options() const;
    // The same for the heartbeat's and the recorder's connections, which the loader's own
    // connection already counts for (/readyz).
    store::StoreOptions own_connection_store_options() const;
    // A claim's lease, at insert as by the claimer: the wait in memory before the publish (a
    // ladder step), then --lease.
    Milliseconds claim_lease() const;

    LoaderOptions options_;
    LoaderSeams seams_;
    StageClock clock_;
    delay::DelayLadder ladder_;
    delay::ReleaseMessages release_messages_;
    LoaderMetrics metrics_;

    // What the stages share, each with its own lock and a contract naming who calls what (see
    // their headers).
    LeaseKeeper leases_;                     // heartbeat -> publisher, claimer, ingest's offers
    HeldRuns held_;                          // every run from its schedule to its record
    ScheduleBoard board_;                    // claimer, ingest's offers -> publisher
    InsertClaimDesk insert_claims_{board_};  // ingest <-> claimer
    ConfirmedRuns confirmed_;                // publisher -> recorder
    RunsToGiveBack to_give_back_;            // publisher, ingest, claimer -> claimer
    ClaimerDoorbell claimer_doorbell_;       // every stage -> claimer

    // The stages: the claimer runs on the thread that calls run(), the others on their own.
    Claimer claimer_;
    Publisher publisher_;
    Heartbeat heartbeat_;
    Recorder recorder_;
};

}  // namespace hourglass::loader
