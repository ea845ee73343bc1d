// The hand-offs between the loader's threads, with plain values: what each holds, when its
// waits return, and how the memory bounds travel with the runs.
#include <gtest/gtest.h>

#include <chrono>
#include <stop_token>
#include <thread>
#include <vector>

#include "loader/claimer_inbox.hpp"
#include "loader/confirmed_runs.hpp"
#include "loader/insert_claim_desk.hpp"
#include "loader/schedule_board.hpp"

namespace hourglass::loader {
namespace {

using namespace std::chrono_literals;

const TimePoint kNow = from_epoch_ms(1795339800000);

MemoryBounds bounds() {
    return {.max_runs = 10, .max_bytes = 1000, .claim_batch = 4, .max_burst_runs = 5, .max_burst_bytes = 500};
}

ScheduledRun scheduled(const std::string& id, TimePoint publish_at, std::size_t bytes = 10) {
    auto run = std::make_unique<ClaimedRun>();
    run->id = id;
    run->due_at = publish_at;
    ScheduledRun scheduled;
    scheduled.publish_at = publish_at;
    scheduled.run = std::move(run);
    scheduled.bytes = bytes;
    return scheduled;
}

std::vector<ScheduledRun> runs_at(TimePoint publish_at, int count, const std::string& prefix = "r") {
    std::vector<ScheduledRun> runs;
    for (int i = 0; i < count; ++i) runs.push_back(scheduled(prefix + std::to_string(i), publish_at));
    return runs;
}

std::vector<const ScheduledRun*> pointers(const std::vector<ScheduledRun>& runs) {
    std::vector<const ScheduledRun*> out;
    for (const auto& run : runs) out.push_back(&run);
    return out;
}

TEST(ScheduleBoard, hands_over_runs_whose_instant_came_earliest_first_within_the_window) {
    ScheduleBoard board(bounds());
    auto runs = runs_at(kNow + 1s, 2, "late");
    auto early = runs_at(kNow, 3, "early");
    std::move(early.begin(), early.end(), std::back_inserter(runs));
    EXPECT_EQ(board.schedule(std::move(runs), {}), 5u);

    auto due = board.take_due(kNow, 2);
    ASSERT_EQ(due.runs.size(), 2u);  // the window: 2 unconfirmed at most
    EXPECT_TRUE(due.window_full);
    EXPECT_EQ(due.runs[0].run->id.substr(0, 5), "early");
    EXPECT_EQ(due.held, 5u);  // in flight still held
    EXPECT_TRUE(board.take_due(kNow, 2).runs.empty());

    board.forget_published(pointers(due.runs));
    due = board.take_due(kNow, 2);
    ASSERT_EQ(due.runs.size(), 1u);  // the last early one; the late ones wait
    EXPECT_FALSE(due.window_full);
    EXPECT_EQ(due.next_publish, kNow + 1s);
}

// Runs whose instant has come (one a millisecond, in this order): one due in 5 s, a burst run
// due in 30 s, and `far` runs due in 30 s and i ms.
std::vector<ScheduledRun> near_burst_and_far(int far) {
    std::vector<ScheduledRun> runs;
    const auto add = [&](const std::string& id, Milliseconds due_in) {
        runs.push_back(scheduled(id, kNow - 100ms + Milliseconds{runs.size()}));
        runs.back().run->due_at = kNow + due_in;
    };
    add("near", 5s);
    add("burst", 30s);
    runs.back().burst = true;
    for (int i = 0; i < far; ++i) add("far" + std::to_string(i), 30s + Milliseconds{i});
    return runs;
}

std::vector<std::string> ids(const std::vector<ScheduledRun>& runs) {
    std::vector<std::string> out;
    for (const auto& run : runs) out.push_back(run.run->id);
    return out;
}

// While the broker is slow (HandoverPace), runs due later than the near rung wait for it; runs
// due sooner and burst runs go now.
TEST(ScheduleBoard, with_a_near_rung_runs_due_later_wait_for_its_instant) {
    ScheduleBoard board(bounds());
    board.schedule(near_burst_and_far(3), {});
    auto due = board.take_due(kNow, 100, Milliseconds{5000});
    EXPECT_EQ(ids(due.runs), (std::vector<std::string>{"near", "burst"}));
    EXPECT_EQ(due.held_for_near_rung, 3u);
    EXPECT_EQ(due.next_publish, kNow + 25s) << "the near rung's instant of the earliest held";
    EXPECT_EQ(due.held, 5u);

    EXPECT_TRUE(board.take_due(kNow + 25s - 1ms, 100, Milliseconds{5000}).runs.empty());
    due = board.take_due(kNow + 25s + 2ms, 100, Milliseconds{5000});
    EXPECT_EQ(ids(due.runs), (std::vector<std::string>{"far0", "far1", "far2"}))
        << "at the near rung's instant they go, slow or not";
    EXPECT_EQ(due.held_for_near_rung, 0u);
}

// Held longer, runs keep room from the claims of runs due sooner: none is once the runs held
// fill half the bounds (max_runs 10 here).
TEST(ScheduleBoard, with_a_near_rung_no_run_waits_longer_once_half_the_bounds_are_held) {
    ScheduleBoard board(bounds());
    board.schedule(near_burst_and_far(4), {});
    const auto due = board.take_due(kNow, 100, Milliseconds{5000});
    EXPECT_EQ(due.runs.size(), 6u);
    EXPECT_EQ(due.held_for_near_rung, 0u);
}

TEST(ScheduleBoard, held_runs_and_offers_take_room_from_the_next_claim_until_settled) {
    ScheduleBoard board(bounds());
    EXPECT_EQ(board.room_for_claim().runs, 4u);  // a claim batch
    board.schedule(runs_at(kNow, 8), {});
    EXPECT_EQ(board.room_for_claim().runs, 2u);  // max_runs 10
    EXPECT_FALSE(board.has_room_for(4));
    const auto reserved = board.reserve(5, 100);
    ASSERT_TRUE(reserved);
    EXPECT_EQ(reserved->runs, 2u);  // no more than a claim could take
    EXPECT_EQ(board.room_for_claim().runs, 0u);
    EXPECT_FALSE(board.reserve(1, 1));
    board.end_reservation(*reserved);
    auto due = board.take_due(kNow, 100);
    board.forget_published(pointers(due.runs));
    EXPECT_EQ(board.room_for_claim().runs, 4u);
    EXPECT_EQ(board.room_for_claim().bytes, 1000u);
}

TEST(ScheduleBoard, the_plan_runs_with_the_ledger_and_may_keep_runs_back) {
    ScheduleBoard board(bounds());
    const auto held = board.schedule(runs_at(kNow, 4), [](std::vector<ScheduledRun>& runs, MemoryLedger& ledger) {
        EXPECT_TRUE(ledger.hold_burst(10));
        runs.front().burst_held = true;
        runs.pop_back();  // deferred
    });
    EXPECT_EQ(held, 3u);
    EXPECT_EQ(board.take_unpublished().size(), 3u);
    EXPECT_EQ(board.held(), 0u);
    EXPECT_EQ(board.room_for_claim().bytes, 1000u);
}

TEST(ScheduleBoard, forgetting_the_schedule_frees_its_room_and_keeps_what_is_in_flight) {
    ScheduleBoard board(bounds());
    board.schedule(runs_at(kNow, 3), {});
    board.schedule(runs_at(kNow + 5s, 4, "later"), {});
    const auto due = board.take_due(kNow, 100);
    EXPECT_EQ(board.forget_scheduled().size(), 4u);
    EXPECT_EQ(board.held(), 3u);
    EXPECT_EQ(board.room_for_claim().bytes, 1000u - 30u);
}

TEST(ScheduleBoard, a_publisher_waiting_for_runs_wakes_when_some_are_scheduled) {
    ScheduleBoard board(bounds());
    std::stop_source stop;
    const auto started = std::chrono::steady_clock::now();
    std::jthread claimer([&] {
        std::this_thread::sleep_for(50ms);
        board.schedule(runs_at(kNow, 1), {});
    });
    board.wait_for_runs(10s, stop.get_token());
    EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
    EXPECT_EQ(board.held(), 1u);
}

ConfirmedRuns::Options recording(std::size_t batch, std::chrono::milliseconds every, std::size_t capacity = 100) {
    return {.batch = batch, .record_every = every, .idle_wait = 10ms, .capacity = capacity};
}

std::vector<HandedOverRun> handed_over(int count, const std::string& prefix = "h") {
    std::vector<HandedOverRun> runs;
    for (int i = 0; i < count; ++i) {
        HandedOverRun run;
        run.id = prefix + std::to_string(i);
        runs.push_back(run);
    }
    return runs;
}

TEST(ConfirmedRuns, a_full_batch_is_taken_at_once_and_fewer_runs_once_the_oldest_waited) {
    ConfirmedRuns confirmed(recording(3, 50ms));
    LockedRowsRetry retry;
    bool ending = false;
    confirmed.push(handed_over(3));
    auto started = std::chrono::steady_clock::now();
    EXPECT_EQ(confirmed.take_batch({}, retry, ending).size(), 3u);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 40ms);

    confirmed.push(handed_over(1));
    started = std::chrono::steady_clock::now();
    EXPECT_EQ(confirmed.take_batch({}, retry, ending).size(), 1u);
    EXPECT_GE(std::chrono::steady_clock::now() - started, 45ms);
    EXPECT_FALSE(ending);
}

TEST(ConfirmedRuns, a_failed_record_puts_its_runs_first_and_a_closed_hand_off_ends_at_a_stop) {
    ConfirmedRuns confirmed(recording(100, 10ms));
    LockedRowsRetry retry;
    bool ending = false;
    confirmed.push(handed_over(1, "later"));
    confirmed.put_back(handed_over(2, "first"));
    const auto runs = confirmed.take_batch({}, retry, ending);
    ASSERT_EQ(runs.size(), 3u);
    EXPECT_EQ(runs[0].id, "first0");
    EXPECT_EQ(runs[2].id, "later0");

    std::stop_source stop;
    stop.request_stop();
    confirmed.close();
    EXPECT_TRUE(confirmed.closed());
    EXPECT_TRUE(confirmed.take_batch(stop.get_token(), retry, ending).empty());
    EXPECT_TRUE(ending);
}

TEST(ConfirmedRuns, is_full_beyond_its_capacity_so_that_claims_stop) {
    ConfirmedRuns confirmed(recording(1000, 1s, 5));
    confirmed.push(handed_over(5));
    EXPECT_FALSE(confirmed.full());
    confirmed.push(handed_over(1, "x"));
    EXPECT_TRUE(confirmed.full());
}

TEST(RunsToGiveBack, keeps_refused_and_deferred_runs_apart_until_taken) {
    RunsToGiveBack to_give_back;
    EXPECT_FALSE(to_give_back.any_refused());
    to_give_back.deferred({"d1"});
    EXPECT_FALSE(to_give_back.any_refused());
    to_give_back.refused({"r1", "r2"});
    EXPECT_TRUE(to_give_back.any_refused());
    const auto taken = to_give_back.take();
    EXPECT_EQ(taken.refused, (std::vector<std::string>{"r1", "r2"}));
    EXPECT_EQ(taken.deferred, (std::vector<std::string>{"d1"}));
    EXPECT_FALSE(to_give_back.any_refused());
}

TEST(ClaimerDoorbell, an_asked_claim_ends_the_wait_once_and_a_ring_rechecks_the_condition) {
    ClaimerDoorbell doorbell;
    doorbell.ring(true);
    auto started = std::chrono::steady_clock::now();
    doorbell.wait_for(10s, [] { return false; });
    EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
    EXPECT_TRUE(doorbell.take_claim_asked());
    EXPECT_FALSE(doorbell.take_claim_asked());

    std::atomic<bool> ready{false};
    std::jthread other([&] {
        std::this_thread::sleep_for(50ms);
        ready = true;
        doorbell.ring();
    });
    started = std::chrono::steady_clock::now();
    doorbell.wait_for(10s, [&] { return ready.load(); });
    EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
    EXPECT_FALSE(doorbell.take_claim_asked());
}

InsertClaimOffer shape() { return {.owner = "me", .lease = Milliseconds{1000}, .horizon_end = kNow}; }

std::vector<ClaimedRun> claimed(int count) {
    std::vector<ClaimedRun> runs(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) runs[static_cast<std::size_t>(i)].id = "c" + std::to_string(i);
    return runs;
}

TEST(InsertClaimDesk, offers_only_while_open_and_within_the_room_a_claim_would_have) {
    ScheduleBoard board(bounds());
    InsertClaimDesk desk(board);
    EXPECT_FALSE(desk.offer(shape(), 3, 100));
    desk.set_open(true);
    const auto offer = desk.offer(shape(), 9, 100);
    ASSERT_TRUE(offer);
    EXPECT_EQ(offer->owner, "me");
    EXPECT_EQ(offer->runs, 4u);  // a claim batch
    EXPECT_EQ(board.room_for_claim().runs, 4u);  // 10 less 4 reserved, a batch at most
    EXPECT_EQ(board.room_for_claim().bytes, 900u);
    desk.adopt(*offer, {});  // the transaction failed: the room is free again
    EXPECT_EQ(board.room_for_claim().bytes, 1000u);
}

TEST(InsertClaimDesk, runs_leased_before_the_claims_were_forgotten_or_at_a_stop_are_given_back) {
    ScheduleBoard board(bounds());
    InsertClaimDesk desk(board);
    desk.set_open(true);
    const auto before = desk.offer(shape(), 2, 100);
    desk.adopt(*before, claimed(2));
    desk.forget_claims();
    const auto after = desk.offer(shape(), 1, 100);
    desk.adopt(*after, claimed(1));

    std::vector<std::string> give_back;
    auto taken = desk.take(false, give_back);
    EXPECT_EQ(taken.runs.size(), 1u);
    EXPECT_EQ(taken.reserved.runs, 1u);
    EXPECT_EQ(give_back, (std::vector<std::string>{"c0", "c1"}));
    board.end_reservation(taken.reserved);
    EXPECT_EQ(board.room_for_claim().bytes, 1000u);

    desk.adopt(*desk.offer(shape(), 1, 100), claimed(1));
    give_back.clear();
    EXPECT_TRUE(desk.take(true, give_back).runs.empty());
    EXPECT_EQ(give_back.size(), 1u);
}

TEST(InsertClaimDesk, closing_waits_for_the_offers_ingest_holds_and_stops_new_ones) {
    ScheduleBoard board(bounds());
    InsertClaimDesk desk(board);
    desk.set_open(true);
    const auto offer = desk.offer(shape(), 1, 100);
    std::jthread ingest([&] {
        std::this_thread::sleep_for(50ms);
        desk.adopt(*offer, claimed(1));
    });
    const auto started = std::chrono::steady_clock::now();
    desk.close(10s);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
    EXPECT_GE(std::chrono::steady_clock::now() - started, 40ms);
    EXPECT_FALSE(desk.offer(shape(), 1, 100));
    EXPECT_EQ(desk.take_all_ids(), (std::vector<std::string>{"c0"}));
}

}  // namespace
}  // namespace hourglass::loader
