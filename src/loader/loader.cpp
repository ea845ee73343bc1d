#include "loader/loader.hpp"

#include <algorithm>
#include <thread>
#include <utility>

#include "amqp/channel.hpp"
#include "common/thread_name.hpp"

namespace hourglass::loader {

namespace {
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
    if (!seams.now) seams.now = [clock = options.clock] { return clock->now_us(); };
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
            amqp::Channel channel(connection, 1);
            delay::declare_forward_ladder(channel, topology,
                                          delay::DelayLadder::for_horizon(horizon));
        };
    }
    return seams;
}
}  // namespace

Loader::Loader(LoaderOptions options, NextRunFunction next_run, LoaderSeams seams)
    : options_(checked(std::move(options))),
      seams_(with_defaults(std::move(seams), options_)),
      clock_{.now_us = seams_.now, .steady = seams_.steady_now},
      ladder_(delay::DelayLadder::for_horizon(options_.horizon)),
      release_messages_(options_.topology, ladder_, options_.releases_observed),
      metrics_(options_.metrics->registry()),
      leases_(options_.lease_timings),
      board_(MemoryBounds{.max_runs = options_.max_in_memory_runs,
                          .max_bytes = options_.max_in_memory_bytes,
                          .claim_batch = options_.claim_batch,
                          .max_burst_runs = options_.max_burst_runs,
                          .max_burst_bytes = options_.max_burst_bytes}),
      confirmed_(ConfirmedRuns::Options{.batch = options_.claim_batch,
                                        .record_every = kRecordEvery,
                                        .idle_wait = kIdleWait,
                                        .capacity = options_.max_in_memory_runs,
                                        .now = seams_.steady_now}),
      claimer_({.owner = options_.owner,
                .horizon = options_.horizon,
                .poll_interval = options_.poll_interval,
                .claim_lease = claim_lease(),
                .claim_batch = options_.claim_batch,
                .max_in_memory_runs = options_.max_in_memory_runs,
                .burst_min_runs = options_.burst_min_runs,
                .bursts = options_.max_burst_runs > 0,
                .max_shared_instants = kMaxSharedInstants,
                .resend_after = options_.resend_after,
                .health = options_.health,
                .forward_ladder_wait = options_.forward_ladder_wait,
                .forward_ladder_declared = options_.topology.forward_ladder},
               {.board = board_,
                .insert_claims = insert_claims_,
                .to_give_back = to_give_back_,
                .doorbell = claimer_doorbell_,
                .held = held_,
                .leases = leases_,
                .confirmed = confirmed_,
                .ladder = ladder_,
                .metrics = metrics_,
                .other_stages_done = [this] { return confirmed_.closed() && recorder_.done(); }},
               {.open_store = seams_.open_store,
                .next_run = std::move(next_run),
                .declare_forward_ladder = seams_.declare_forward_ladder},
               clock_),
      publisher_({.max_unconfirmed = options_.max_unconfirmed,
                  .delay_lanes = options_.topology.delay_lanes,
                  .releases_observed = options_.releases_observed,
                  .realtime = options_.realtime_publisher,
                  .slow_confirm = options_.slow_confirm},
                 {.board = board_,
                  .leases = leases_,
                  .release_messages = release_messages_,
                  .confirmed = confirmed_,
                  .to_give_back = to_give_back_,
                  .held = held_,
                  .claimer = claimer_doorbell_,
                  .metrics = metrics_},
                 {.open_channel = seams_.open_channel, .make_realtime = seams_.make_publisher_realtime},
                 clock_),
      heartbeat_({.owner = options_.owner,
                  .claim_lease = claim_lease(),
                  .max_clock_offset = options_.max_clock_offset},
                 {.leases = leases_,
                  .held = held_,
                  .insert_claims = insert_claims_,
                  .claimer = claimer_doorbell_,
                  .metrics = metrics_,
                  .database_clock = *options_.clock},
                 clock_),
      recorder_(options_.owner,
                {.confirmed = confirmed_, .held = held_, .claimer = claimer_doorbell_, .metrics = metrics_},
                clock_) {}

Loader::~Loader() = default;

Milliseconds Loader::claim_lease() const { return options_.lease + ladder_.step(); }

void Loader::wake() { claimer_doorbell_.ring(true); }

void Loader::wake_for(TimePoint due) {
    if (due - clock_.now() <= options_.poll_interval + kClaimMargin) wake();
}

std::size_t Loader::in_memory_runs() const { return board_.held(); }

std::optional<InsertClaimOffer> Loader::offer_insert_claims(std::size_t runs, std::size_t bytes) {
    // A loader whose heartbeat is stale may have lost its claims to another instance.
    if (!leases_.may_publish(clock_.steady())) return std::nullopt;
    return insert_claims_.offer(InsertClaimOffer{.owner = options_.owner,
                                                 .lease = claim_lease(),
                                                 .horizon_end = clock_.now() + options_.horizon,
                                                 .made_at = clock_.now()},
                                runs, bytes);
}

void Loader::adopt_insert_claims(const InsertClaimOffer& offer, std::vector<ClaimedRun> runs) {
    // Scheduled with the next claim, as one batch, so that the runs of an instant accepted over
    // many small batches count toward a burst as they do when claimed; at once if one is due
    // before the next regular claim could take it (as wake_for).
    const auto urgent_before = clock_.now() + options_.poll_interval + kClaimMargin;
    const bool urgent = std::any_of(runs.begin(), runs.end(),
                                    [&](const ClaimedRun& run) { return run.due_at <= urgent_before; });
    // Held before the offer ends (orphan reconciliation): counted once more by the claimer's
    // schedule.
    held_.add(ids_of(runs));
    insert_claims_.adopt(offer, std::move(runs));
    claimer_doorbell_.ring(urgent);
}

store::StoreOptions Loader::named_store_options() const {
    auto store_options = options_.store;
    store_options.session_owner = options_.owner;
    return store_options;
}

store::StoreOptions Loader::own_connection_store_options() const {
    auto store_options = named_store_options();
    store_options.open_connections = nullptr;  // the loader's own connection counts for it
    return store_options;
}

void Loader::run(std::stop_token stop) {
    std::stop_callback wake_on_stop(stop, [this] {
        claimer_doorbell_.ring();
        board_.interrupt();
        confirmed_.interrupt();
    });
    std::jthread heartbeat([this, stop](std::stop_token) {
        name_this_thread("hg-heartbeat");
        heartbeat_.run(stop, seams_.open_store, own_connection_store_options());
    });
    std::jthread recorder([this, stop](std::stop_token) {
        name_this_thread("hg-loader-rec");
        recorder_.run(stop, seams_.open_store, own_connection_store_options());
    });
    std::jthread publisher([this, stop](std::stop_token) {
        name_this_thread("hg-loader-pub");
        publisher_.run(stop);
    });
    claimer_.run(stop, named_store_options());
}

}  // namespace hourglass::loader
