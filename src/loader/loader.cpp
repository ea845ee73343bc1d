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

namespace {
// While publishes await confirms the publisher polls the socket this often at most.
constexpr auto kConfirmPoll = std::chrono::microseconds{1000};
constexpr auto kIdleWait = Milliseconds{100};
constexpr auto kShutdownConfirmWait = std::chrono::seconds{5};
// A job accepted due sooner than the next regular claim plus this wakes the claimer. Later
// ones wait for that claim: a run claimed later only goes to a lower rung of the ladder, while
// claiming after every commit and confirm made 10,622 claim queries in a steady 1,000 jobs/s
// run of 60 s (305 now), on the CPU the publisher needs.
constexpr auto kClaimMargin = Milliseconds{1000};
// Confirmed runs are recorded together once the oldest has waited this long (or a claim batch
// of them is ready): one UPDATE per confirm made 9,848 in that run (1,555 now). It
// only widens the window in which a crash can cause a duplicate (reference §6, at least once).
constexpr auto kRecordEvery = Milliseconds{50};

// The options the loader divides by or counts on, checked once: the CLI bounds them, but a
// loader built in code must fail here, not divide by zero at its first publish.
LoaderOptions checked(LoaderOptions options) {
    delay::check_delay_lanes(options.topology.delay_lanes, "loader");
    return options;
}

LoaderSeams with_defaults(LoaderSeams seams, const LoaderOptions& options) {
    if (!seams.open_store) {
        seams.open_store = store::open_claim_store;
    }
    if (!seams.open_channel) {
        seams.open_channel = [amqp_options = options.amqp] { return open_release_channel(amqp_options); };
    }
    if (!seams.now) seams.now = [] { return now_us(); };
    if (!seams.steady_now) seams.steady_now = [] { return std::chrono::steady_clock::now(); };
    if (!seams.make_publisher_realtime) {
        seams.make_publisher_realtime = [] { return make_this_thread_realtime(kPublisherRealtimePriority); };
    }
    if (!seams.declare_forward_ladder) {
        seams.declare_forward_ladder = [amqp_options = options.amqp, topology = options.topology,
                                        horizon = options.horizon]() mutable {
            // Its own connection: the publisher's reads confirms, which a declaration's wait
            // for its replies would pass over.
            amqp_options.connection_name = "hourglass loader setup";
            amqp::Connection connection(amqp_options);
            connection.open_channel(1);
            delay::declare_forward_ladder(connection, 1, topology,
                                          delay::DelayLadder::for_horizon(horizon));
        };
    }
    return seams;
}
}  // namespace

Loader::Loader(LoaderOptions options, NextRunFunction next_run, LoaderSeams seams)
    : options_(checked(std::move(options))),
      next_run_(std::move(next_run)),
      seams_(with_defaults(std::move(seams), options_)),
      leases_(options_.lease_timings),
      metrics_(options_.metrics->registry()),
      forward_ladder_declared_(options_.topology.forward_ladder),
      ladder_(delay::DelayLadder::for_horizon(options_.horizon)),
      release_messages_(options_.topology, ladder_, options_.releases_observed),
      ledger_(MemoryBounds{.max_runs = options_.max_in_memory_runs,
                           .max_bytes = options_.max_in_memory_bytes,
                           .claim_batch = options_.claim_batch,
                           .max_burst_runs = options_.max_burst_runs,
                           .max_burst_bytes = options_.max_burst_bytes}),
      bursts_(options_.burst_min_runs, options_.max_burst_runs > 0, options_.horizon,
              ladder_.step(), kMaxSharedInstants) {}

Loader::~Loader() = default;

void Loader::Schedule::push(Scheduled scheduled) {
    heap_.push_back(std::move(scheduled));
    std::push_heap(heap_.begin(), heap_.end(), later);
}

Loader::Scheduled Loader::Schedule::take_top() {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    auto top = std::move(heap_.back());
    heap_.pop_back();
    // After a hotspot, give back the room it took (the vector would keep its peak capacity).
    if (heap_.capacity() > 4096 && heap_.size() < heap_.capacity() / 4) heap_.shrink_to_fit();
    return top;
}

void Loader::wake() {
    {
        std::lock_guard lock(mutex_);
        wake_requested_ = true;
    }
    claimer_wake_.notify_one();
}

void Loader::wake_for(TimePoint due) {
    if (due - clock_now() <= options_.poll_interval + kClaimMargin) wake();
}

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

std::size_t Loader::in_memory_runs() const {
    std::lock_guard lock(mutex_);
    return schedule_.size() + in_flight_;
}

void Loader::run(std::stop_token stop) {
    std::stop_callback wake_on_stop(stop, [this] {
        claimer_wake_.notify_all();
        publisher_wake_.notify_all();
        recorder_wake_.notify_all();
    });
    std::jthread heartbeat([this, stop](std::stop_token) {
        name_this_thread("hg-heartbeat");
        heartbeat_loop(stop);
    });
    std::jthread recorder([this, stop](std::stop_token) {
        name_this_thread("hg-loader-rec");
        record_loop(stop);
    });
    std::jthread publisher([this, stop](std::stop_token) {
        name_this_thread("hg-loader-pub");
        make_publisher_realtime();
        publish_loop(stop);
    });
    claim_loop(stop);
}

bool Loader::prepare_forward_ladder(std::vector<ClaimedRun>& runs) {
    const auto targeted = [](const ClaimedRun& run) { return !run.exchange.empty(); };
    if (forward_ladder_declared_ || std::none_of(runs.begin(), runs.end(), targeted)) return true;
    // The claim that starts the declaration waits for it a while (0.2 s is usual); later claims
    // only look whether it has ended.
    const bool starting = !forward_ladder_declaration_.valid();
    if (starting) {
        // On a thread of its own, so that a broker that stalls it holds up no claim of the other
        // runs. Detached: the task owns a copy of the seam, and a declaration still blocked
        // when the loader ends must not hold up the process's exit.
        std::packaged_task<void()> declaration(seams_.declare_forward_ladder);
        forward_ladder_declaration_ = declaration.get_future();
        std::thread([task = std::move(declaration)]() mutable {
            name_this_thread("hg-loader-decl");
            task();
        }).detach();
    }
    const auto wait = starting ? options_.forward_ladder_wait : Milliseconds{0};
    if (forward_ladder_declaration_.wait_for(wait) == std::future_status::ready) {
        try {
            std::exchange(forward_ladder_declaration_, {}).get();
            forward_ladder_declared_ = true;
            spdlog::info("loader: declared the forward ladder for runs with a target exchange");
            return true;
        } catch (const std::exception& error) {
            const auto grant = forward_ladder_log_.take(seams_.steady_now());
            if (grant.log) {
                spdlog::warn(
                    "loader: could not declare the forward ladder, so runs with a target "
                    "exchange wait for the next claim: {}{}",
                    error.what(), left_out_note(grant.left_out, "failures"));
            }
        }
    }
    const auto first_targeted = std::stable_partition(
        runs.begin(), runs.end(), [&](const ClaimedRun& run) { return !targeted(run); });
    std::lock_guard lock(mutex_);
    for (auto it = first_targeted; it != runs.end(); ++it) given_back_.push_back(it->id);
    runs.erase(first_targeted, runs.end());
    return false;
}

void Loader::schedule(std::vector<ClaimedRun> runs) {
    if (runs.empty()) return;
    const auto now = clock_now();
    // Prepared before taking the lock the publisher needs.
    std::vector<Scheduled> scheduled;
    scheduled.reserve(runs.size());
    for (auto& run : runs) {
        const auto after = next_run_ ? next_run_(run, now) : AfterHandover{};
        if (after.catchup > 0) {
            set_header(run.properties, std::string(header::kCatchup),
                       static_cast<std::int64_t>(after.catchup));
        }
        // Headers count as well as bodies: a job may carry up to a frame of them.
        const auto bytes = run.body.size() + encoded_size(run.properties);
        const auto publish_at = ladder_.publish_at(run.due_at, now);
        scheduled.push_back(Scheduled{.publish_at = publish_at,
                                      .run = std::make_unique<ClaimedRun>(std::move(run)),
                                      .bytes = bytes,
                                      .observed_with = std::nullopt,
                                      .burst = false,
                                      .burst_held = false,
                                      .next_due = after.next_due,
                                      .skipped = after.skip});
    }
    {
        std::lock_guard lock(mutex_);
        mark_bursts(scheduled, now);
        std::vector<std::string> ids;
        ids.reserve(scheduled.size());
        for (const auto& entry : scheduled) ids.push_back(entry.run->id);
        held_.add(ids);
        for (auto& entry : scheduled) {
            ledger_.hold(entry.bytes);
            schedule_.push(std::move(entry));
        }
        ++schedule_generation_;
        metrics_.set_runs_held(schedule_.size() + in_flight_);
    }
    publisher_wake_.notify_one();
}

void Loader::mark_bursts(std::vector<Scheduled>& scheduled, TimePoint now) {
    std::vector<PlannedRun> runs;
    runs.reserve(scheduled.size());
    for (const auto& entry : scheduled) runs.push_back({entry.run->due_at, entry.bytes});
    const auto plans = bursts_.plan(runs, now, ledger_);
    std::vector<Scheduled> kept;
    kept.reserve(scheduled.size());
    for (std::size_t i = 0; i < scheduled.size(); ++i) {
        auto& entry = scheduled[i];
        if (plans[i] == BurstPlan::deferred) {
            burst_deferred_.push_back(entry.run->id);
            continue;
        }
        if (plans[i] != BurstPlan::delay_queues) {
            entry.burst = true;
            entry.publish_at = entry.run->due_at;
            entry.burst_held = plans[i] == BurstPlan::burst_held;
        }
        kept.push_back(std::move(entry));
    }
    scheduled = std::move(kept);
}

void Loader::forget_held(const Scheduled& scheduled) {
    ledger_.forget(scheduled.bytes, scheduled.burst_held);
}

void Loader::confirmed(std::vector<HandedOverRun> runs) {
    {
        std::lock_guard lock(mutex_);
        if (confirmed_.empty()) confirmed_since_ = seams_.steady_now();
        for (auto& run : runs) confirmed_.push_back(std::move(run));
    }
    recorder_wake_.notify_one();
    claimer_wake_.notify_one();  // memory freed: a claim may fill it
}

template <typename Settled>
void Loader::give_back(const std::vector<Settled>& runs) {
    if (runs.empty()) return;
    std::vector<std::string> ids;
    {
        std::lock_guard lock(mutex_);
        for (const auto& settled : runs) {
            ids.push_back(settled.value.run->id);
            given_back_.push_back(settled.value.run->id);
            forget_held(settled.value);
        }
        in_flight_ -= std::min(in_flight_, runs.size());
    }
    held_.remove(ids);
    claimer_wake_.notify_one();
}

void Loader::make_publisher_realtime() {
    if (options_.realtime_publisher == RealtimeMode::off) return;
    const int error = seams_.make_publisher_realtime();
    metrics_.set_publisher_realtime(error == 0);
    if (error == 0) {
        spdlog::info("loader: the publisher thread runs under real-time scheduling (SCHED_FIFO)");
    } else {
        // Not a fault: most deployments do not grant it. Hand-overs are then as punctual as
        // the machine's load lets a normal thread be (hourglass_handover_lateness_seconds).
        spdlog::info("loader: the publisher thread keeps normal scheduling, real-time was "
                     "refused: {}",
                     realtime_refused_reason(error));
    }
}

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
    // Read after the rows, so that a run handed over in between is not taken for an orphan; a
    // run given back in between is given back again, which changes nothing.
    const auto leased = store.claims_older_than(options_.owner, lease, timings.orphan_age);
    if (leased.empty()) return;
    const auto orphans = held_.not_held(leased);
    const auto given_back = store.release_orphaned_claims(options_.owner, orphans, lease, timings.orphan_age);
    if (given_back == 0) return;
    metrics_.count_orphaned_claims(given_back);
    spdlog::warn("loader: gave back {} runs leased to this instance that it did not hold (a "
                 "commit whose reply was lost)",
                 given_back);
    wake();
}

// One clock (reference §6): due times are compared on PostgreSQL's clock. Each heartbeat measures
// this host's offset to it; the one clock (now_us, the default seam) corrects for it, so a host
// whose clock runs ahead does not release early. An offset beyond --max-clock-offset is refused
// at start (cli) and logged here.
void Loader::follow_database_clock(std::chrono::microseconds offset) {
    set_clock_offset(offset);
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

// Another instance took this one for dead and gave its claims back: what it holds in memory
// may be others' now. Forget it (runs in flight are recorded only where still its own), and
// give back anything claimed since, before registering again.
void Loader::forget_lost_claims(store::ClaimStore& store) {
    std::size_t forgotten = 0;
    {
        std::lock_guard lock(mutex_);
        forgotten = schedule_.size();
        while (!schedule_.empty()) forget_held(schedule_.take_top());
        ++schedule_generation_;
        ++claims_epoch_;
    }
    held_.clear();
    store.release_all_claims(options_.owner);
    leases_.claims_forgotten();
    spdlog::warn("loader: forgot {} claimed runs (other instances took them over) and gave back "
                 "the rest",
                 forgotten);
}

void Loader::claim_loop(std::stop_token stop) {
    // After `stop` the claimer keeps going until the publisher has finished, so that confirmed
    // runs are recorded. If the database fails after `stop`, leases simply expire.
    // Runs to give back whose rows another transaction holds: given back when `retry` says, and
    // meanwhile claimed by nobody else (this instance's lease), nor held up by anything.
    std::vector<std::string> held_give_backs;
    LockedRowsRetry retry;
    run_with_reconnect("loader (PostgreSQL)", stop, [&] {
        const auto connected = seams_.open_store(options_.store);
        auto& store = *connected;
        spdlog::info("loader: connected to PostgreSQL");
        // No claims at insert while the claimer is away: it schedules them.
        const auto close_on_exit = std::unique_ptr<Loader, void (*)(Loader*)>(this, [](Loader* loader) {
            std::lock_guard lock(loader->mutex_);
            loader->insert_claims_open_ = false;
        });
        // Claims run every poll interval, at once when woken, and back to back while each
        // stops at its limit (a hotspot, or memory freed by confirms while one remains).
        auto next_claim = seams_.steady_now();
        bool backlog = true;
        while (true) {
            if (leases_.claims_lost()) forget_lost_claims(store);
            if (stop.stop_requested()) take_insert_claims(true);  // gives them back
            std::vector<std::string> given_back;
            std::vector<std::string> deferred;
            bool threads_done = false;  // publisher and recorder, after `stop`
            {
                std::lock_guard lock(mutex_);
                given_back.swap(given_back_);
                deferred.swap(burst_deferred_);
                threads_done = publisher_done_ && recorder_done_;
            }
            auto to_give_back = given_back;
            to_give_back.insert(to_give_back.end(), deferred.begin(), deferred.end());
            const bool tried_held = retry.due(seams_.steady_now());
            if (tried_held) {
                to_give_back.insert(to_give_back.end(), held_give_backs.begin(),
                                    held_give_backs.end());
                held_give_backs.clear();
            }
            std::vector<std::string> left;
            try {
                left = store.release_claims(options_.owner, to_give_back);
            } catch (...) {
                std::lock_guard lock(mutex_);
                given_back_.insert(given_back_.end(), to_give_back.begin(), to_give_back.end());
                throw;
            }
            if (!given_back.empty() && to_give_back.size() > left.size()) {
                spdlog::info("loader: gave back {} claimed runs the broker did not confirm",
                             std::min(given_back.size(), to_give_back.size() - left.size()));
            }
            if (!left.empty() && !retry.waiting()) {
                spdlog::warn(
                    "loader: {} claimed runs the broker did not confirm wait to be given "
                    "back: another PostgreSQL transaction holds their rows",
                    left.size());
            }
            held_give_backs.insert(held_give_backs.end(), left.begin(), left.end());
            retry.settled(seams_.steady_now(), !held_give_backs.empty(), tried_held);
            if (stop.stop_requested()) {
                if (threads_done) {
                    close_insert_claims();
                    finish_claims(store);
                    return;
                }
            } else {
                store::ClaimLimit limit{.runs = 0};
                bool woken = false;
                {
                    std::lock_guard lock(mutex_);
                    limit.runs = claim_capacity();
                    limit.bytes = ledger_.claim_bytes();
                    woken = std::exchange(wake_requested_, false);
                }
                const auto steady_now = seams_.steady_now();
                // A burst whose runs wait in the store is a step away: claim them now, within the
                // others' bounds, so that they are in hand by the instant.
                const bool cut_reached = bursts_.cut_reached(clock_now());
                const bool claim_now = backlog || woken || cut_reached || steady_now >= next_claim;
                if (claim_now) next_claim = steady_now + options_.poll_interval;
                // Runs just given back were refused by the broker: claiming them again at once
                // would only spin; the next poll (or a wake) tries again.
                if (claim_now && limit.runs > 0 && given_back.empty()) {
                    // The lease covers the wait in memory before the publish, then `lease`.
                    const auto now = clock_now();
                    auto horizon_end = now + options_.horizon;
                    if (const auto cut = bursts_.cut()) horizon_end = std::min(horizon_end, *cut - Milliseconds{1});
                    auto [runs, at_limit] = store.claim_due(options_.owner, horizon_end,
                                                            limit, options_.lease + ladder_.step(),
                                                            resend_due_before(now),
                                                            leases_.timings().takeover_after);
                    backlog = at_limit;
                    if (!runs.empty()) spdlog::debug("loader: claimed {} runs", runs.size());
                    const auto resent = std::count_if(runs.begin(), runs.end(),
                                                      [](const auto& run) { return run.resent; });
                    if (resent > 0) {
                        spdlog::warn("loader: publishing {} runs again: handed over, but not "
                                     "released {} ms after their due time",
                                     resent, options_.resend_after->count());
                        metrics_.count_runs_resent(static_cast<std::size_t>(resent));
                    }
                    // Runs given back wait for the next poll, as refused ones do.
                    if (!prepare_forward_ladder(runs)) backlog = false;
                    schedule_with_insert_claims(std::move(runs));
                } else if (claim_now) {
                    schedule_with_insert_claims({});
                }
                // Ingest claims at insert only what no claim would take first: nothing is
                // left in the store for want of room, and no burst waits there.
                {
                    std::lock_guard lock(mutex_);
                    insert_claims_open_ = !backlog && !bursts_.cut();
                }
                if (backlog && claim_now && limit.runs > 0 && given_back.empty()) continue;
            }
            std::unique_lock lock(mutex_);
            if (stop.stop_requested()) insert_claims_open_ = false;
            auto wait = std::max(std::chrono::steady_clock::duration::zero(),
                                 next_claim - seams_.steady_now());
            if (const auto cut = bursts_.cut()) {
                wait = std::min<std::chrono::steady_clock::duration>(
                    wait, std::max(Milliseconds{0}, *cut - ladder_.step() - clock_now()));
            }
            claimer_wake_.wait_for(lock, wait, [&] {
                // With a backlog, confirms that free room for a whole batch (or all of a
                // smaller limit) start the next claim at once.
                const bool room_for_a_batch =
                    claim_capacity() >= std::min(options_.claim_batch, options_.max_in_memory_runs);
                return wake_requested_ || !given_back_.empty() || (backlog && room_for_a_batch) ||
                       (publisher_done_ && recorder_done_) != threads_done ||
                       (stop.stop_requested() && publisher_done_ && recorder_done_);
            });
        }
    });
}

std::size_t Loader::claim_capacity() const {
    // Burst runs have bounds of their own (mark_bursts); runs ingest may claim at insert count
    // from their offer on.
    return ledger_.claim_runs(schedule_.size() + in_flight_);
}

// Records confirmed runs in batches: a claim batch of them, or once the oldest has waited
// kRecordEvery. Runs whose rows another transaction holds are kept apart and tried again as
// LockedRowsRetry says, so that they hold up no other record. After `stop` it records the
// publisher's last confirms, then says it is done.
void Loader::record_loop(std::stop_token stop) {
    auto store_options = options_.store;
    store_options.open_connections = nullptr;  // the loader's own connection counts for it
    // Recorder thread only; kept across reconnects.
    std::vector<HandedOverRun> locked;
    LockedRowsRetry retry;
    run_with_reconnect("loader (recorder)", stop, [&] {
        const auto store = seams_.open_store(store_options);
        while (true) {
            std::vector<HandedOverRun> handed_over;
            bool ending = false;
            {
                std::unique_lock lock(mutex_);
                while (true) {
                    ending = stop.stop_requested() && publisher_done_;
                    const auto now = seams_.steady_now();
                    const bool oldest_waited =
                        !confirmed_.empty() && now >= confirmed_since_ + kRecordEvery;
                    if (ending || oldest_waited || confirmed_.size() >= options_.claim_batch ||
                        retry.due(now)) {
                        break;
                    }
                    auto wake_at =
                        confirmed_.empty() ? now + kIdleWait : confirmed_since_ + kRecordEvery;
                    if (retry.waiting()) wake_at = std::min(wake_at, retry.at());
                    recorder_wake_.wait_for(lock, wake_at - now);
                }
                handed_over.swap(confirmed_);
            }
            const bool tried_locked = ending || retry.due(seams_.steady_now());
            const auto before = locked.size();
            if (tried_locked) {
                handed_over.insert(handed_over.end(), std::make_move_iterator(locked.begin()),
                                   std::make_move_iterator(locked.end()));
                locked.clear();
            }
            if (ending && handed_over.empty()) break;
            std::vector<HandedOverRun> left;
            try {
                left = store->record_handed_over(options_.owner, handed_over);
            } catch (...) {
                std::lock_guard lock(mutex_);
                confirmed_.insert(confirmed_.begin(), handed_over.begin(), handed_over.end());
                throw;
            }
            const auto recorded = handed_over.size() - left.size();
            forget_recorded(handed_over, left);
            handed_over_total_ += recorded;
            metrics_.count_runs_enqueued(recorded);
            spdlog::debug("loader: {} runs handed over", recorded);
            if (ending && !left.empty()) {
                // Their claims stay with this instance's lease, which the next instance takes
                // over once the lock is gone: they are published again (at least once).
                spdlog::warn(
                    "loader: stopping with {} handed-over runs not recorded: another "
                    "PostgreSQL transaction holds their rows",
                    left.size());
                left.clear();
            }
            locked.insert(locked.end(), std::make_move_iterator(left.begin()),
                          std::make_move_iterator(left.end()));
            if (!locked.empty() && !retry.waiting()) {
                spdlog::warn(
                    "loader: {} handed-over runs wait to be recorded: another PostgreSQL "
                    "transaction holds their rows; the runs handed over meanwhile are "
                    "recorded",
                    locked.size());
            } else if (tried_locked && before > 0 && locked.empty()) {
                spdlog::info(
                    "loader: the {} handed-over runs that waited for locked rows are "
                    "recorded",
                    before);
            }
            retry.settled(seams_.steady_now(), !locked.empty(), tried_locked);
            metrics_.set_handovers_waiting(locked.size());
        }
    });
    {
        std::lock_guard lock(mutex_);
        recorder_done_ = true;
    }
    claimer_wake_.notify_all();
}

void Loader::forget_recorded(const std::vector<HandedOverRun>& handed_over,
                             const std::vector<HandedOverRun>& left) {
    std::set<std::string> waiting;
    for (const auto& run : left) waiting.insert(run.id);
    std::vector<std::string> recorded;
    recorded.reserve(handed_over.size());
    for (const auto& run : handed_over) {
        if (!waiting.contains(run.id)) recorded.push_back(run.id);
    }
    held_.remove(recorded);
}

std::optional<TimePoint> Loader::resend_due_before(TimePoint now) {
    if (!options_.resend_after) return std::nullopt;
    // After an outage the broker first releases what it held, and the audit records it: a run
    // counts as lost only once both had `resend_after` to do so.
    using metrics::Component, metrics::Peer;
    const auto& metrics = *options_.metrics;
    const bool observing = metrics.connected(Component::loader, Peer::rabbitmq) &&
                           metrics.connected(Component::audit, Peer::rabbitmq) &&
                           metrics.connected(Component::audit, Peer::postgresql);
    if (!observing) {
        observing_since_.reset();
        return std::nullopt;
    }
    if (!observing_since_) observing_since_ = now;
    if (now - *observing_since_ < *options_.resend_after) return std::nullopt;
    return now - *options_.resend_after;
}

void Loader::finish_claims(store::ClaimStore& store) {
    std::vector<std::string> unpublished;
    {
        std::lock_guard lock(mutex_);
        while (!schedule_.empty()) unpublished.push_back(schedule_.take_top().run->id);
        for (const auto& claims : adopted_) {
            for (const auto& run : claims.runs) unpublished.push_back(run.id);
        }
        adopted_.clear();
        ledger_.forget_all();
    }
    // Rows another transaction holds stay claimed: taken over once the lease ends.
    const auto kept = store.release_claims(options_.owner, unpublished).size();
    if (unpublished.size() > kept) {
        spdlog::info("loader: gave back {} claimed runs not yet published",
                     unpublished.size() - kept);
    }
    // Runs published but not confirmed in time go back too (at least once), and the instance
    // leaves: nobody waits for its heartbeat to go stale.
    store.release_all_claims(options_.owner);
    store.leave(options_.owner);
}

void Loader::group_releases(std::vector<Scheduled>& batch, TimePoint now, unsigned first_lane) const {
    std::vector<delay::BatchRun> runs;
    runs.reserve(batch.size());
    for (const auto& scheduled : batch) runs.push_back({scheduled.run.get(), scheduled.burst, scheduled.expired});
    auto observed_with = release_messages_.group(runs, now, first_lane);
    for (std::size_t i = 0; i < batch.size(); ++i) {
        if (observed_with[i]) batch[i].observed_with = std::move(observed_with[i]);
    }
}

void Loader::publish_loop(std::stop_token stop) {
    run_with_reconnect("loader (RabbitMQ)", stop, [&] { publish_session(stop); });
    {
        std::lock_guard lock(mutex_);
        publisher_done_ = true;
    }
    recorder_wake_.notify_all();
    claimer_wake_.notify_all();
}

void Loader::publish_session(std::stop_token stop) {
    const auto channel = seams_.open_channel();

    amqp::ConfirmTracker<Scheduled> in_flight;
    std::optional<std::chrono::steady_clock::time_point> stop_deadline;
    unsigned next_lane = 0;  // consecutive publishes go to different lanes of their rung
    LogBudget release_nack_log{1, std::chrono::minutes{1}};

    auto settle = [&](const amqp::Confirm& confirm) {
        auto settled = in_flight.settle(confirm);
        std::vector<HandedOverRun> runs;
        std::vector<amqp::ConfirmTracker<Scheduled>::Settled> refused;
        bool nacked_releases = false;
        for (auto& s : settled) {
            // A publish to the release exchange is refused when one queue bound to it refuses
            // its copy (x-overflow reject-publish at its limit): the others may have theirs, so
            // the run counts as released, never published again. A delay queue is a publish's
            // only destination: refused there, nothing was routed, and the run goes back.
            if (!s.ack && s.value.burst) {
                metrics_.count_release_nacks(1);
                nacked_releases = true;
            } else if (!s.ack) {
                refused.push_back(std::move(s));
                continue;
            }
            const auto& run = *s.value.run;
            // An expired run is never observed: recorded as ended, never re-sent.
            runs.push_back({run.id, run.run, s.value.next_due,
                            options_.releases_observed && !s.value.expired, s.value.observed_with,
                            s.value.published_at, s.value.expired});
        }
        if (!runs.empty()) {
            {
                std::lock_guard lock(mutex_);
                in_flight_ -= runs.size();
                for (const auto& s : settled) {
                    if (s.ack || s.value.burst) forget_held(s.value);
                }
            }
            confirmed(std::move(runs));
        }
        if (nacked_releases && release_nack_log.take(std::chrono::steady_clock::now()).log) {
            spdlog::warn("loader: the broker refused releases (basic.nack): a queue bound to the "
                         "release exchange refuses messages (full, x-overflow reject-publish?); "
                         "they count as released, not sent again (hourglass_release_nacks_total)");
        }
        if (!refused.empty()) {
            metrics_.count_delay_nacks(refused.size());
            spdlog::warn("loader: the broker refused {} publishes into delay queues (basic.nack); "
                         "their claims go back to the store",
                         refused.size());
            give_back(refused);
        }
    };

    try {
        while (true) {
            metrics_.set_unconfirmed_publishes(in_flight.size());
            std::vector<Scheduled> due_now;
            TimePoint next_publish = clock_now() + kIdleWait;
            // Only while this instance's claims are surely its own (live leases).
            const bool may_publish = leases_.may_publish(seams_.steady_now());
            bool window_full = false;
            TimePoint taken_at{};
            {
                std::lock_guard lock(mutex_);
                if (!stop.stop_requested() && may_publish) {
                    const auto now = clock_now();
                    taken_at = now;
                    while (!schedule_.empty() && schedule_.top().publish_at <= now &&
                           in_flight_ < options_.max_unconfirmed) {
                        due_now.push_back(schedule_.take_top());
                        ++in_flight_;
                    }
                    window_full = in_flight_ >= options_.max_unconfirmed;
                    if (!schedule_.empty()) next_publish = std::min(next_publish, schedule_.top().publish_at);
                }
                metrics_.set_runs_held(schedule_.size() + in_flight_);
            }
            // One instant for the batch: every run in it was due to go by then, so each gets
            // the TTL of its rung, and the grouping and the publishes agree on the queue. Never
            // before the instant the runs were taken at: the one clock can step back (each
            // heartbeat re-measures PostgreSQL's), and a run published "before" its publish
            // instant would round up to the next rung's TTL and be released a whole step late.
            const auto batch_now = std::max(taken_at, clock_now());
            // Too late for the job (x-hourglass-expires-after): a hand-over now is a release
            // at least this late.
            for (auto& scheduled : due_now) {
                const auto& run = *scheduled.run;
                scheduled.expired = scheduled.skipped ||
                                    (run.expires_after && batch_now - run.due_at > *run.expires_after);
            }
            group_releases(due_now, batch_now, next_lane);
            // The batch's publishes leave together (measured: 15 % more runs handed over a
            // second in a hotspot, 12 % less CPU per run), and are let go before the wait for
            // their confirms below.
            HeldSends held(*channel, due_now.size() > 1);
            for (std::size_t i = 0; i < due_now.size(); ++i) {
                auto& scheduled = due_now[i];
                const auto now = seams_.now();
                std::uint64_t sequence = 0;
                try {
                    sequence = channel->publish(
                        scheduled.expired
                            ? release_messages_.expired(*scheduled.run, batch_now,
                                                        channel->frame_max(), scheduled.skipped)
                            : release_messages_.release(*scheduled.run, batch_now,
                                                        channel->frame_max(), next_lane,
                                                        scheduled.observed_with, scheduled.burst));
                    if (scheduled.skipped) metrics_.count_runs_skipped(1);
                    else if (scheduled.expired) metrics_.count_runs_expired(1);
                    else if (scheduled.burst) metrics_.count_burst_runs(1);
                    next_lane = (next_lane + 1) % options_.topology.delay_lanes;
                } catch (...) {
                    // This run and the rest of the batch were not published: back to the store.
                    std::vector<amqp::ConfirmTracker<Scheduled>::Settled> unpublished;
                    for (auto j = i; j < due_now.size(); ++j) {
                        unpublished.push_back({0, std::move(due_now[j]), false, false});
                    }
                    give_back(unpublished);
                    throw;
                }
                metrics_.observe_handover_lateness(
                    std::chrono::duration_cast<std::chrono::microseconds>(now - scheduled.publish_at));
                scheduled.published_at = std::chrono::time_point_cast<Milliseconds>(now);
                in_flight.published(sequence, std::move(scheduled));
            }
            held.release();
            if (stop.stop_requested()) {
                if (!stop_deadline) stop_deadline = std::chrono::steady_clock::now() + kShutdownConfirmWait;
                if (in_flight.empty() || std::chrono::steady_clock::now() > *stop_deadline) break;
            }

            if (!in_flight.empty()) {
                const auto until_publish = std::chrono::duration_cast<std::chrono::microseconds>(
                    next_publish - clock_now());
                // With the window full only a confirm lets the next run go: wait for one. Waiting
                // for the next publish instant, already past, would poll without sleeping (and
                // a real-time publisher would then keep a CPU from the broker that confirms).
                const auto wait = window_full ? std::chrono::microseconds{kIdleWait}
                                              : std::clamp(until_publish, std::chrono::microseconds{0}, kConfirmPoll);
                for (auto event = channel->next_event(wait); event;
                     event = channel->next_event(std::chrono::microseconds{0})) {
                    if (const auto* confirm = std::get_if<amqp::Confirm>(&*event)) settle(*confirm);
                }
            } else {
                {
                    std::unique_lock lock(mutex_);
                    const auto generation = schedule_generation_;
                    // A wait for a duration, not until an instant: the one clock is corrected
                    // (and injected in tests), the condition variable's is not.
                    publisher_wake_.wait_for(lock, next_publish - clock_now(), [&] {
                        return stop.stop_requested() || schedule_generation_ != generation;
                    });
                }
                // Keeps heartbeats flowing and notices a closed connection.
                while (auto event = channel->next_event(std::chrono::microseconds{0})) {
                }
            }
        }
    } catch (...) {
        // Published or not, unconfirmed runs go back to the store: claimed again, at worst
        // released twice (at least once, reference §6).
        give_back(in_flight.take_unsettled());
        metrics_.set_unconfirmed_publishes(0);
        throw;
    }
    if (!in_flight.empty()) {
        spdlog::warn("loader: {} publishes unconfirmed at shutdown; their claims go back to the store",
                     in_flight.size());
    }
}

}  // namespace hourglass::loader
