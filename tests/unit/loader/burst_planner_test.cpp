// The loader's planner (burst release) and its memory ledger, with plain values: which runs of
// a claim are a burst, held or sent back to the store; and how much the next claim may take.
#include "loader/burst_planner.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace hourglass::loader {
namespace {

using std::chrono::seconds;

const TimePoint kNow = from_epoch_ms(1795339800000);
constexpr Milliseconds kHorizon{60000};
constexpr Milliseconds kStep{1000};

MemoryBounds bounds(std::size_t max_burst_runs = 100, std::size_t max_burst_bytes = 1u << 20) {
    return {.max_runs = 1000, .max_bytes = 1u << 20, .claim_batch = 100,
            .max_burst_runs = max_burst_runs, .max_burst_bytes = max_burst_bytes};
}

std::vector<PlannedRun> at(TimePoint due, std::size_t count, std::size_t bytes = 10) {
    return std::vector<PlannedRun>(count, PlannedRun{due, bytes});
}

std::size_t count_of(const std::vector<BurstPlan>& plans, BurstPlan which) {
    return static_cast<std::size_t>(std::count(plans.begin(), plans.end(), which));
}

TEST(MemoryLedger, a_claim_takes_what_the_bounds_leave_less_what_offers_reserve) {
    MemoryLedger ledger(bounds());
    EXPECT_EQ(ledger.claim_runs(0), 100u);    // a claim batch
    EXPECT_EQ(ledger.claim_runs(950), 50u);   // up to max_runs
    EXPECT_EQ(ledger.claim_runs(1000), 0u);
    ledger.reserve(40, 1000);
    EXPECT_EQ(ledger.claim_runs(950), 10u);
    EXPECT_EQ(ledger.claim_bytes(), (1u << 20) - 1000);
    ledger.end_reservation(40, 1000);
    ledger.hold((1u << 20) - 10);
    EXPECT_EQ(ledger.claim_bytes(), 10u);
    ledger.hold(10);
    EXPECT_EQ(ledger.claim_runs(2), 0u);  // bytes full
    ledger.forget(10, false);
    EXPECT_EQ(ledger.claim_bytes(), 10u);
}

TEST(MemoryLedger, burst_runs_held_ahead_count_against_the_burst_bounds_not_the_others) {
    MemoryLedger ledger(bounds(2, 100));
    ASSERT_TRUE(ledger.hold_burst(60));
    ledger.hold(60);
    EXPECT_EQ(ledger.claim_runs(1), 100u);  // the burst run takes no room of the others
    EXPECT_EQ(ledger.claim_bytes(), 1u << 20);
    EXPECT_FALSE(ledger.hold_burst(41));  // 101 bytes > 100
    ASSERT_TRUE(ledger.hold_burst(40));
    EXPECT_FALSE(ledger.hold_burst(0));  // 2 runs at most
    ledger.forget(60, true);
    EXPECT_TRUE(ledger.hold_burst(1));
    ledger.forget_all();
    EXPECT_EQ(ledger.burst_runs(), 0u);
    EXPECT_EQ(ledger.bytes(), 0u);
}

TEST(BurstPlanner, an_instant_shared_by_enough_runs_of_one_claim_is_a_burst_held_until_its_instant) {
    BurstPlanner planner(500, true, kHorizon, kStep, 10000);
    MemoryLedger ledger(bounds(1000));
    auto runs = at(kNow + seconds{30}, 500);
    const auto lone = at(kNow + seconds{31}, 1);
    runs.insert(runs.end(), lone.begin(), lone.end());
    const auto plans = planner.plan(runs, kNow, ledger);
    EXPECT_EQ(count_of(plans, BurstPlan::burst_held), 500u);
    EXPECT_EQ(plans.back(), BurstPlan::delay_queues);
    EXPECT_EQ(ledger.burst_runs(), 500u);
    EXPECT_FALSE(planner.cut());
}

TEST(BurstPlanner, an_instant_reached_over_several_claims_becomes_a_burst_for_the_later_runs) {
    BurstPlanner planner(500, true, kHorizon, kStep, 10000);
    MemoryLedger ledger(bounds(1000));
    const auto due = kNow + seconds{30};
    EXPECT_EQ(count_of(planner.plan(at(due, 300), kNow, ledger), BurstPlan::delay_queues), 300u);
    // 300 + 300: a burst from here on (the first 300 went the delay queues' way).
    EXPECT_EQ(count_of(planner.plan(at(due, 300), kNow, ledger), BurstPlan::burst_held), 300u);
    // Runs due at distinct instants (a steady load) are never counted together.
    std::vector<PlannedRun> steady;
    for (int i = 0; i < 600; ++i) steady.push_back({kNow + seconds{40} + Milliseconds{i}, 10});
    EXPECT_EQ(count_of(planner.plan(steady, kNow, ledger), BurstPlan::delay_queues), 600u);
}

TEST(BurstPlanner, runs_the_burst_bounds_cannot_hold_go_back_and_claims_stop_short_until_a_step_before) {
    BurstPlanner planner(500, true, kHorizon, kStep, 10000);
    MemoryLedger ledger(bounds(200));
    const auto due = kNow + seconds{30};
    const auto plans = planner.plan(at(due, 600), kNow, ledger);
    EXPECT_EQ(count_of(plans, BurstPlan::burst_held), 200u);
    EXPECT_EQ(count_of(plans, BurstPlan::deferred), 400u);
    ASSERT_TRUE(planner.cut());
    EXPECT_EQ(*planner.cut(), due);
    EXPECT_FALSE(planner.cut_reached(due - seconds{2}));
    EXPECT_TRUE(planner.cut_reached(due - kStep));
    EXPECT_FALSE(planner.cut());
    // Claimed a step away, they are burst runs within the others' bounds.
    const auto late = planner.plan(at(due, 400), due - kStep, ledger);
    EXPECT_EQ(count_of(late, BurstPlan::burst), 400u);
}

TEST(BurstPlanner, turned_off_every_run_takes_the_delay_queues) {
    BurstPlanner planner(500, false, kHorizon, kStep, 10000);
    MemoryLedger ledger(bounds());
    const auto plans = planner.plan(at(kNow + seconds{30}, 1000), kNow, ledger);
    EXPECT_EQ(count_of(plans, BurstPlan::delay_queues), 1000u);
    EXPECT_EQ(ledger.burst_runs(), 0u);
}

}  // namespace
}  // namespace hourglass::loader
