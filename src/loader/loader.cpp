#include "loader/loader.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "amqp/channel.hpp"
#include "amqp/confirm_tracker.hpp"
#include "common/retry.hpp"
#include "common/text.hpp"
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
      next_run_(std::move(next_run)),
      seams_(with_defaults(std::move(seams), options_)),
      leases_(options_.lease_timings),
      metrics_(options_.metrics->registry()),
      forward_ladder_declared_(options_.topology.forward_ladder),
      ladder_(delay::DelayLadder::for_horizon(options_.horizon)),
      release_messages_(options_.topology, ladder_, options_.releases_observed),
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
      bursts_(options_.burst_min_runs, options_.max_burst_runs > 0, options_.horizon,
              ladder_.step(), kMaxSharedInstants) {
    if (options_.resend_after) resend_rule_.emplace(*options_.resend_after, options_.health);
}

Loader::~Loader() = default;

void Loader::wake() { claimer_doorbell_.ring(true); }

void Loader::wake_for(TimePoint due) {
    if (due - clock_now() <= options_.poll_interval + kClaimMargin) wake();
}

std::size_t Loader::in_memory_runs() const { return board_.held(); }

void Loader::run(std::stop_token stop) {
    std::stop_callback wake_on_stop(stop, [this] {
        claimer_doorbell_.ring();
        board_.interrupt();
        confirmed_.interrupt();
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

void Loader::give_back(const std::vector<InFlight::Settled>& runs) {
    if (runs.empty()) return;
    std::vector<std::string> ids;
    std::vector<const ScheduledRun*> published;
    for (const auto& settled : runs) {
        ids.push_back(settled.value.run->id);
        published.push_back(&settled.value);
    }
    to_give_back_.refused(ids);
    board_.forget_published(published);
    held_.remove(ids);
    claimer_doorbell_.ring();
}

}  // namespace hourglass::loader
