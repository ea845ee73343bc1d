// The claimer stage (src/loader/claimer.hpp) on a fake store and a clock the test moves, one
// round at a time: its pace (every poll interval, at once when asked, back to back while each
// claim stops at its limit), what it gives back, what a fence makes it forget, and its end.
#include "loader/claimer.hpp"

#include <gtest/gtest.h>

#include <stop_token>

#include "common/metrics.hpp"
#include "support/fake_claim_store.hpp"
#include "support/manual_clock.hpp"

namespace hourglass::loader {
namespace {

using namespace std::chrono_literals;
using testing::FakeDatabase;
using testing::FakeStore;
using Next = Claimer::Next;

constexpr auto kPoll = 500ms;

class ClaimerTest : public ::testing::Test {
protected:
    ClaimerTest() {
        db_.steady_now = [this] { return clock_.steady(); };
        claimer_.start_pacing();
    }
    TimePoint in(Milliseconds after) const {
        return std::chrono::time_point_cast<Milliseconds>(clock_.wall()) + after;
    }
    Next round() { return claimer_.round(store_, stop_.get_token()); }
    std::size_t released() {
        return db_.read([](const FakeDatabase& db) { return db.released.size(); });
    }

    testing::ManualClock clock_;
    FakeDatabase db_;
    FakeStore store_{db_};
    std::stop_source stop_;
    ScheduleBoard board_{MemoryBounds{.max_runs = 100, .max_bytes = 1 << 20, .claim_batch = 2,
                                      .max_burst_runs = 0, .max_burst_bytes = 0}};
    InsertClaimDesk insert_claims_{board_};
    RunsToGiveBack to_give_back_;
    ClaimerDoorbell doorbell_;
    HeldRuns held_;
    LeaseKeeper leases_;
    ConfirmedRuns confirmed_{ConfirmedRuns::Options{.batch = 2, .record_every = 50ms, .idle_wait = 100ms,
                                                    .capacity = 100, .now = [this] { return clock_.steady(); }}};
    delay::DelayLadder ladder_ = delay::DelayLadder::for_horizon(60s);
    metrics::ServiceMetrics service_metrics_;
    LoaderMetrics metrics_{service_metrics_.registry()};
    bool others_done_ = false;
    Claimer claimer_{{.owner = "me",
                      .horizon = 60s,
                      .poll_interval = kPoll,
                      .claim_lease = 30s,
                      .claim_batch = 2,
                      .max_in_memory_runs = 100,
                      .burst_min_runs = 500,
                      .bursts = false,
                      .max_shared_instants = 10,
                      .resend_after = std::nullopt,
                      .health = nullptr,
                      .forward_ladder_wait = 2000ms,
                      .forward_ladder_declared = true},
                     {.board = board_,
                      .insert_claims = insert_claims_,
                      .to_give_back = to_give_back_,
                      .doorbell = doorbell_,
                      .held = held_,
                      .leases = leases_,
                      .confirmed = confirmed_,
                      .ladder = ladder_,
                      .metrics = metrics_,
                      .other_stages_done = [this] { return others_done_; }},
                     {.open_store = {}, .next_run = {}, .declare_forward_ladder = {}},
                     StageClock{.now_us = [this] { return clock_.wall(); },
                                .steady = [this] { return clock_.steady(); }}};
};

TEST_F(ClaimerTest, claims_once_a_poll_interval_on_its_clock) {
    db_.add("a", in(5s));
    EXPECT_EQ(round(), Next::wait);
    EXPECT_EQ(db_.claims, 1);
    EXPECT_EQ(board_.held(), 1u);
    db_.add("b", in(5s));
    clock_.advance(kPoll - 1ms);
    EXPECT_EQ(round(), Next::wait);
    EXPECT_EQ(db_.claims, 1) << "claimed before the poll interval passed";
    clock_.advance(1ms);
    round();
    EXPECT_EQ(db_.claims, 2);
    EXPECT_EQ(board_.held(), 2u);
}

TEST_F(ClaimerTest, the_doorbell_asking_for_a_claim_claims_at_once) {
    round();
    db_.add("urgent", in(200ms));
    doorbell_.ring(true);
    round();
    EXPECT_EQ(db_.claims, 2);
    EXPECT_EQ(board_.held(), 1u);
}

TEST_F(ClaimerTest, a_claim_that_stops_at_its_limit_claims_again_at_once) {
    for (const auto* id : {"a", "b", "c", "d", "e"}) db_.add(id, in(5s));
    EXPECT_EQ(round(), Next::claim_again);
    EXPECT_EQ(round(), Next::claim_again);
    EXPECT_EQ(round(), Next::wait) << "the last claim took what was left";
    EXPECT_EQ(db_.claims, 3);
    EXPECT_EQ(board_.held(), 5u);
}

// Runs the broker refused go back to the store at once, and the same round claims nothing:
// claiming them again at once would only spin.
TEST_F(ClaimerTest, refused_runs_go_back_at_once_and_are_not_claimed_again_in_the_same_round) {
    ClaimedRun refused;
    refused.id = "refused";
    refused.due_at = in(1s);
    db_.add(std::move(refused), "me");  // claimed, published, refused
    to_give_back_.refused({"refused"});
    round();
    EXPECT_EQ(released(), 1u);
    EXPECT_FALSE(db_.claimed("refused"));
    EXPECT_EQ(db_.claims, 0);
    clock_.advance(kPoll);
    round();
    EXPECT_EQ(db_.claims, 1);
    EXPECT_TRUE(db_.claimed("refused")) << "claimed again at the next poll";
}

// Another instance fenced this one while its sessions were open, so its claims are still its
// own: it gives back what it never published, before it registers again (the heartbeat does,
// once the keeper says so), and keeps what it published for the recorder: given back too, a
// run whose record was held up (a lock, a slow statement) would be published again by another.
TEST_F(ClaimerTest, a_fenced_instance_gives_back_what_it_never_published_and_keeps_what_it_did) {
    db_.add("waiting", in(5s));
    round();
    ASSERT_EQ(board_.held(), 1u);
    db_.add(ClaimedRun{.id = "published"}, "me");  // published: awaits its record
    held_.add(std::vector<std::string>{"published"});
    db_.fence("me");
    leases_.registration_lost();
    clock_.advance(kPoll);
    round();
    EXPECT_EQ(board_.held(), 0u);
    EXPECT_EQ(held_.size(), 1u) << "the published run is held until its record";
    EXPECT_EQ(db_.release_all_calls, 0);
    db_.read([](const FakeDatabase& db) {
        EXPECT_EQ(db.released, std::vector<std::string>{"waiting"});
        EXPECT_EQ(db.rows.at("published").owner, "me");
        EXPECT_EQ(db.rows.at("waiting").owner, "");
    });
    EXPECT_FALSE(leases_.claims_lost()) << "the heartbeat may register again";
}

TEST_F(ClaimerTest, stops_only_once_the_other_stages_ended_then_gives_back_what_it_holds_and_leaves) {
    db_.add("a", in(5s));
    round();
    stop_.request_stop();
    EXPECT_EQ(round(), Next::wait) << "the publisher may still have confirms to record";
    EXPECT_EQ(db_.leaves, 0);
    others_done_ = true;
    EXPECT_EQ(round(), Next::finished);
    EXPECT_FALSE(db_.claimed("a"));
    EXPECT_EQ(db_.leaves, 1);
}

}  // namespace
}  // namespace hourglass::loader
