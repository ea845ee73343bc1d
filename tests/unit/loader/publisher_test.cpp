// The publisher stage (src/loader/publisher.hpp) on a fake broker channel and a clock the test
// moves, a round at a time: each run published at its instant and not before, nothing once the
// last heartbeat is older than the grace, the rest of a batch withheld when a publish outlasts
// it, and each confirm's run sent on: to the recorder, or back to the store; how long each
// confirm took, and runs held for the near rung while confirms are slow.
#include "loader/publisher.hpp"

#include <gtest/gtest.h>

#include <stop_token>

#include "common/metrics.hpp"
#include "support/fake_release_channel.hpp"
#include "support/manual_clock.hpp"
#include "support/prometheus_text.hpp"

namespace hourglass::loader {
namespace {

using namespace std::chrono_literals;
using testing::FakeBroker;
using testing::FakeChannel;

class PublisherTest : public ::testing::Test {
protected:
    static delay::TopologyOptions topology() {
        delay::TopologyOptions options{.names = delay::TopologyNames("hourglass")};
        options.delay_lanes = 1;
        return options;
    }
    TimePoint now() const { return std::chrono::time_point_cast<Milliseconds>(clock_.wall()); }
    // A run claimed and scheduled: published at `publish_at` into the rung of `due`.
    void schedule(const std::string& id, TimePoint publish_at, TimePoint due) {
        auto run = std::make_unique<ClaimedRun>();
        run->id = id;
        run->routing_key = "rk." + id;
        run->body = "body of " + id;
        run->due_at = due;
        ScheduledRun scheduled;
        scheduled.publish_at = publish_at;
        scheduled.run = std::move(run);
        scheduled.bytes = 16;
        std::vector<ScheduledRun> runs;
        runs.push_back(std::move(scheduled));
        board_.schedule(std::move(runs), [&](std::vector<ScheduledRun>&, MemoryLedger&) {});
        held_.add(std::vector<std::string>{id});
    }
    std::size_t publish() { return publisher_.publish_due(channel_, in_flight_, stop_.get_token()); }
    void settle() { publisher_.settle_arrived(channel_, in_flight_); }
    std::size_t confirmed() {
        bool ending = false;
        return confirmed_.take_batch(stop_.get_token(), LockedRowsRetry{}, ending).size();
    }
    double metric(const std::string& name) {
        return hourglass::testing::prometheus::parse(service_metrics_.registry().render_prometheus()).value(name);
    }

    hourglass::testing::ManualClock clock_;
    FakeBroker broker_;
    FakeChannel channel_{broker_, [this] { return clock_.wall(); }};
    Publisher::InFlight in_flight_;
    std::stop_source stop_;
    ScheduleBoard board_{MemoryBounds{}};
    LeaseKeeper leases_;
    delay::ReleaseMessages release_messages_{topology(), delay::DelayLadder::for_horizon(60s), true};
    ConfirmedRuns confirmed_{ConfirmedRuns::Options{.batch = 1, .record_every = 50ms, .idle_wait = 1ms,
                                                    .capacity = 100, .now = [this] { return clock_.steady(); }}};
    RunsToGiveBack to_give_back_;
    HeldRuns held_;
    ClaimerDoorbell doorbell_;
    metrics::ServiceMetrics service_metrics_;
    LoaderMetrics metrics_{service_metrics_.registry()};
    Publisher publisher_{{.max_unconfirmed = 100, .delay_lanes = 1, .releases_observed = true,
                          .realtime = RealtimeMode::off, .slow_confirm = 20ms},
                         {.board = board_,
                          .leases = leases_,
                          .release_messages = release_messages_,
                          .confirmed = confirmed_,
                          .to_give_back = to_give_back_,
                          .held = held_,
                          .claimer = doorbell_,
                          .metrics = metrics_},
                         {.open_channel = {}, .make_realtime = {}},
                         StageClock{.now_us = [this] { return clock_.wall(); },
                                    .steady = [this] { return clock_.steady(); }}};
};

TEST_F(PublisherTest, publishes_a_run_at_its_instant_and_not_a_millisecond_before) {
    leases_.beat_succeeded(clock_.steady());
    schedule("a", now() + 1s, now() + 2s);
    EXPECT_EQ(publish(), 0u);
    clock_.advance(999ms);
    EXPECT_EQ(publish(), 0u) << "published early";
    clock_.advance(1ms);
    EXPECT_EQ(publish(), 1u);
    ASSERT_EQ(broker_.publishes().size(), 1u);
    EXPECT_EQ(broker_.publishes()[0].at, clock_.wall());
    settle();
    EXPECT_EQ(confirmed(), 1u) << "the confirmed run goes to the recorder";
    EXPECT_EQ(board_.held(), 0u);
}

TEST_F(PublisherTest, publishes_nothing_once_its_last_beat_was_sent_longer_than_the_grace_ago) {
    leases_.beat_succeeded(clock_.steady());
    schedule("a", now(), now() + 1s);
    clock_.advance(kPublishGrace);
    EXPECT_EQ(publish(), 0u);
    EXPECT_EQ(board_.held(), 1u) << "kept for when it may publish again";
    leases_.beat_succeeded(clock_.steady());
    EXPECT_EQ(publish(), 1u);
}

// The ownership rule before every publish, not once a batch: a publish held up by the broker's
// flow control (or a pause of the process) past the grace withholds the rest of its batch,
// which goes back to the store for whoever owns it then (before, all of a batch went out). It
// replaces a LoaderTest that slept 400 ms inside a publish and failed now and then on a busy
// machine.
TEST_F(PublisherTest, a_publish_that_outlasts_the_grace_withholds_the_rest_of_its_batch) {
    leases_.beat_succeeded(clock_.steady());
    for (const auto* id : {"a", "b", "c", "d", "e"}) schedule(id, now(), now() + 1s);
    broker_.before_publish = [this] { clock_.advance(kPublishGrace); };
    EXPECT_EQ(publish(), 1u);
    EXPECT_EQ(to_give_back_.take().refused.size(), 4u);
    EXPECT_EQ(metric("hourglass_publishes_withheld_total"), 4);
    EXPECT_EQ(held_.size(), 1u) << "only the published run is still held";
}

TEST_F(PublisherTest, a_nacked_run_goes_back_to_the_store_and_an_acked_one_to_the_recorder) {
    leases_.beat_succeeded(clock_.steady());
    schedule("refused", now(), now() + 1s);
    schedule("taken", now() + 1ms, now() + 1s);
    broker_.answer_next({FakeBroker::Answer::nack, FakeBroker::Answer::ack});
    clock_.advance(1ms);
    EXPECT_EQ(publish(), 2u);
    settle();
    EXPECT_EQ(to_give_back_.take().refused, std::vector<std::string>{"refused"});
    EXPECT_EQ(confirmed(), 1u);
}

// How long the broker takes to confirm a hand-over bounds how late the run reached its delay
// queue, where its TTL starts (bench/journal/2026-12-07-what-bounds-the-sweep.md).
TEST_F(PublisherTest, the_time_a_confirm_takes_is_measured_from_the_publish) {
    leases_.beat_succeeded(clock_.steady());
    schedule("a", now(), now() + 1s);
    broker_.hold_confirms = true;
    EXPECT_EQ(publish(), 1u);
    clock_.advance(30ms);
    broker_.hold_confirms = false;
    settle();
    EXPECT_EQ(confirmed(), 1u);
    const auto histogram = [this](const std::string& le) {
        return hourglass::testing::prometheus::parse(service_metrics_.registry().render_prometheus())
            .value("hourglass_handover_confirm_seconds_bucket", {{"le", le}});
    };
    EXPECT_EQ(histogram("0.02"), 0) << "counted shorter than the 30 ms it took";
    EXPECT_EQ(histogram("0.05"), 1);
    EXPECT_EQ(metric("hourglass_handover_confirm_seconds_count"), 1);
}

// While the broker is slow to confirm, a run due later than the near rung waits for it: a run
// that reaches its delay queue late starts its TTL late (reference §6.2). Slow is a confirm,
// or the oldest publish still awaiting one, slower than --slow-confirm (20 ms here).
TEST_F(PublisherTest, while_a_publish_awaits_its_confirm_too_long_runs_due_later_wait_for_the_near_rung) {
    leases_.beat_succeeded(clock_.steady());
    schedule("first", now(), now() + 1s);
    broker_.hold_confirms = true;
    EXPECT_EQ(publish(), 1u);
    clock_.advance(20ms);
    schedule("far", now(), now() + 30s);
    EXPECT_EQ(publish(), 1u) << "20 ms is not slow yet";
    clock_.advance(1ms);
    const auto far_due = now() + 30s;
    schedule("far2", now(), far_due);
    schedule("soon", now(), now() + 3s);
    EXPECT_EQ(publish(), 1u) << "only the run due within the near rung goes";
    EXPECT_EQ(broker_.publishes().back().message.routing_key, "rk.soon");
    EXPECT_EQ(metric("hourglass_handover_held_total"), 1);

    broker_.hold_confirms = false;
    settle();
    leases_.beat_succeeded(clock_.steady());
    clock_.advance(far_due - Publisher::kNearLead - now() - 1ms);
    leases_.beat_succeeded(clock_.steady());
    EXPECT_EQ(publish(), 0u);
    clock_.advance(1ms);
    EXPECT_EQ(publish(), 1u);
    EXPECT_EQ(broker_.publishes().back().message.exchange, "hourglass.delay.ttl-5000ms");
}

TEST_F(PublisherTest, once_confirms_are_quick_for_a_second_runs_go_a_horizon_ahead_again) {
    leases_.beat_succeeded(clock_.steady());
    schedule("first", now(), now() + 1s);
    broker_.hold_confirms = true;
    EXPECT_EQ(publish(), 1u);
    clock_.advance(30ms);
    broker_.hold_confirms = false;
    settle();  // a confirm slower than 20 ms: slow for a second from now
    EXPECT_EQ(confirmed(), 1u);
    clock_.advance(HandoverPace::kCalmAfter - 1ms);
    leases_.beat_succeeded(clock_.steady());
    schedule("held", now(), now() + 30s);
    EXPECT_EQ(publish(), 0u);
    clock_.advance(1ms);
    schedule("far", now(), now() + 30s);
    EXPECT_EQ(publish(), 1u) << "calm again";
    EXPECT_EQ(broker_.publishes().back().message.routing_key, "rk.far");
}

}  // namespace
}  // namespace hourglass::loader
