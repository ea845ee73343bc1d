// The delay ladder (reference §6.3): a fixed, bounded set of TTL queues reaching the horizon, and a
// choice of queue and publish time that never releases a run before its due time.
#include "delay/topology.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <vector>

namespace hourglass::delay {
namespace {

using std::chrono::days;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

const TimePoint kNow = from_epoch_ms(1795339800123);

std::vector<std::int64_t> counts(const std::vector<Milliseconds>& ttls) {
    std::vector<std::int64_t> out;
    for (const auto ttl : ttls) out.push_back(ttl.count());
    return out;
}

// Checks the shape every ladder must have; returns the step.
Milliseconds check_ladder_shape(const DelayLadder& ladder, Milliseconds horizon) {
    const auto& ttls = ladder.ttls();
    EXPECT_FALSE(ttls.empty());
    if (ttls.empty()) return Milliseconds{0};
    EXPECT_EQ(ttls.front(), Milliseconds{0});
    EXPECT_LE(ttls.size(), 64u);
    EXPECT_GE(ttls.back(), horizon);
    const auto step = ttls.size() > 1 ? ttls[1] - ttls[0] : Milliseconds{1000};
    EXPECT_GT(step, Milliseconds{0});
    EXPECT_EQ(step.count() % 1000, 0) << "step must be whole seconds";
    for (std::size_t i = 1; i < ttls.size(); ++i) EXPECT_EQ(ttls[i] - ttls[i - 1], step);
    // No useless rung: the one before the last does not already reach the horizon.
    if (ttls.size() > 1) {
        EXPECT_LT(ttls[ttls.size() - 2], horizon);
    }
    return step;
}

// --- ladder shape ---------------------------------------------------------------------------

TEST(DelayLadder, default_horizon_has_61_queues_one_second_apart) {
    const auto ladder = DelayLadder::for_horizon(seconds{60});
    std::vector<std::int64_t> expected;
    for (std::int64_t ttl = 0; ttl <= 60000; ttl += 1000) expected.push_back(ttl);
    EXPECT_EQ(counts(ladder.ttls()), expected);
    EXPECT_EQ(ladder.ttls().size(), 61u);
}

TEST(DelayLadder, one_second_steps_up_to_the_horizon_that_fills_64_queues) {
    EXPECT_EQ(DelayLadder::for_horizon(seconds{62}).step(), seconds{1});
    EXPECT_EQ(DelayLadder::for_horizon(seconds{62}).ttls().size(), 63u);
    EXPECT_EQ(DelayLadder::for_horizon(seconds{63}).step(), seconds{2});
}

TEST(DelayLadder, explicit_step_reaches_the_horizon) {
    EXPECT_EQ(counts(DelayLadder(seconds{10}, seconds{3}).ttls()),
              (std::vector<std::int64_t>{0, 3000, 6000, 9000, 12000}));
    EXPECT_EQ(counts(DelayLadder(seconds{9}, seconds{3}).ttls()),
              (std::vector<std::int64_t>{0, 3000, 6000, 9000}));
}

TEST(DelayLadder, at_most_64_queues_reaching_the_horizon_from_one_second_to_30_days) {
    std::vector<Milliseconds> horizons;
    for (std::int64_t s = 1; s <= 7200; ++s) horizons.emplace_back(s * 1000);
    for (std::int64_t m = 120; m <= 30 * 24 * 60; m += 7) horizons.emplace_back(m * 60000);
    for (std::int64_t ms = 1; ms <= 200000; ms += 997) horizons.emplace_back(ms);
    horizons.emplace_back(days{30});
    horizons.emplace_back(days{30} - Milliseconds{1});
    horizons.emplace_back(hours{24});
    for (const auto horizon : horizons) {
        SCOPED_TRACE(horizon.count());
        const auto ladder = DelayLadder::for_horizon(horizon);
        check_ladder_shape(ladder, horizon);
        if (::testing::Test::HasFailure()) return;
    }
}

TEST(DelayLadder, short_horizons_use_a_one_second_step) {
    EXPECT_EQ(counts(DelayLadder::for_horizon(seconds{5}).ttls()),
              (std::vector<std::int64_t>{0, 1000, 2000, 3000, 4000, 5000}));
    EXPECT_EQ(counts(DelayLadder::for_horizon(Milliseconds{1500}).ttls()),
              (std::vector<std::int64_t>{0, 1000, 2000}));
}

TEST(DelayLadder, thirty_day_horizon_stays_within_64_queues) {
    const auto ladder = DelayLadder::for_horizon(days{30});
    check_ladder_shape(ladder, days{30});
    EXPECT_LE(ladder.ttls().size(), 64u);
    EXPECT_GE(ladder.ttls().size(), 32u) << "the ladder should use its queue budget";
}

// --- publish_at and ttl_for -----------------------------------------------------------------
// publish_at rounds the wait in the broker down (the run waits in memory for the rest);
// ttl_for rounds up, so a run published at or after publish_at is never released early.

TEST(DelayLadder, publish_at_leaves_the_largest_rung_not_longer_than_the_time_left) {
    const DelayLadder ladder(seconds{60}, seconds{2});
    EXPECT_EQ(ladder.publish_at(kNow + Milliseconds{1}, kNow), kNow + Milliseconds{1});
    EXPECT_EQ(ladder.publish_at(kNow + Milliseconds{1999}, kNow), kNow + Milliseconds{1999});
    EXPECT_EQ(ladder.publish_at(kNow + Milliseconds{2000}, kNow), kNow);
    EXPECT_EQ(ladder.publish_at(kNow + Milliseconds{5999}, kNow), kNow + Milliseconds{1999});
    EXPECT_EQ(ladder.publish_at(kNow + Milliseconds{60000}, kNow), kNow);
    EXPECT_EQ(ladder.publish_at(kNow + Milliseconds{61999}, kNow), kNow + Milliseconds{1999});
}

TEST(DelayLadder, publish_at_is_the_due_time_when_already_due) {
    const auto ladder = DelayLadder::for_horizon(seconds{60});
    EXPECT_EQ(ladder.publish_at(kNow, kNow), kNow);
    EXPECT_EQ(ladder.publish_at(kNow - Milliseconds{1}, kNow), kNow - Milliseconds{1});
    EXPECT_EQ(ladder.publish_at(kNow - days{365}, kNow), kNow - days{365});
}

TEST(DelayLadder, due_beyond_the_ladder_waits_in_memory_for_the_longest_rung) {
    const auto ladder = DelayLadder::for_horizon(seconds{60});
    const auto due = kNow + minutes{10};
    EXPECT_EQ(ladder.publish_at(due, kNow), due - Milliseconds{60000});
    EXPECT_EQ(ladder.ttl_for(due, ladder.publish_at(due, kNow)), Milliseconds{60000});
}

TEST(DelayLadder, ttl_for_is_the_smallest_rung_not_shorter_than_the_time_left) {
    const DelayLadder ladder(seconds{60}, seconds{2});
    EXPECT_EQ(ladder.ttl_for(kNow + Milliseconds{1}, kNow), Milliseconds{2000});
    EXPECT_EQ(ladder.ttl_for(kNow + Milliseconds{1999}, kNow), Milliseconds{2000});
    EXPECT_EQ(ladder.ttl_for(kNow + Milliseconds{2000}, kNow), Milliseconds{2000});
    EXPECT_EQ(ladder.ttl_for(kNow + Milliseconds{2001}, kNow), Milliseconds{4000});
    EXPECT_EQ(ladder.ttl_for(kNow + Milliseconds{59999}, kNow), Milliseconds{60000});
    EXPECT_EQ(ladder.ttl_for(kNow + Milliseconds{60000}, kNow), Milliseconds{60000});
}

TEST(DelayLadder, ttl_for_is_zero_for_a_due_time_now_or_past) {
    const auto ladder = DelayLadder::for_horizon(seconds{60});
    EXPECT_EQ(ladder.ttl_for(kNow, kNow), Milliseconds{0});
    EXPECT_EQ(ladder.ttl_for(kNow - Milliseconds{1}, kNow), Milliseconds{0});
    EXPECT_EQ(ladder.ttl_for(kNow - days{365}, kNow), Milliseconds{0});
}

TEST(DelayLadder, run_published_on_time_is_released_exactly_at_its_due_time) {
    for (const Milliseconds horizon : std::vector<Milliseconds>{
             seconds{1}, seconds{5}, seconds{60}, seconds{61}, minutes{10}, hours{1}}) {
        SCOPED_TRACE(horizon.count());
        const auto ladder = DelayLadder::for_horizon(horizon);
        const auto step = ladder.ttls().size() > 1 ? ladder.ttls()[1] : Milliseconds{1000};
        // Every millisecond for short horizons, a coprime stride for long ones.
        const Milliseconds stride{horizon <= Milliseconds{60000} ? 1 : 37};
        for (auto due = kNow - seconds{10}; due <= kNow + horizon; due += stride) {
            const auto publish = ladder.publish_at(due, kNow);
            if (due < kNow) {
                ASSERT_EQ(publish, due) << to_epoch_ms(due);
                ASSERT_EQ(ladder.ttl_for(due, std::max(publish, kNow)), Milliseconds{0});
                continue;
            }
            ASSERT_GE(publish, kNow) << to_epoch_ms(due);
            ASSERT_LT(publish - kNow, step) << "waits in memory at most one step";
            const auto ttl = ladder.ttl_for(due, publish);
            ASSERT_EQ(ttl, due - publish) << to_epoch_ms(due);
            ASSERT_EQ(publish + ttl, due);
        }
    }
}

TEST(DelayLadder, run_published_late_is_never_released_early_nor_later_than_its_lateness) {
    for (const Milliseconds horizon :
         std::vector<Milliseconds>{seconds{5}, seconds{60}, minutes{10}}) {
        SCOPED_TRACE(horizon.count());
        const auto ladder = DelayLadder::for_horizon(horizon);
        for (auto due = kNow - seconds{3}; due <= kNow + horizon; due += Milliseconds{41}) {
            const auto planned = std::max(ladder.publish_at(due, kNow), kNow);
            for (std::int64_t late = 0; late <= 7000; late += 7) {
                const auto published = planned + Milliseconds{late};
                const auto ttl = ladder.ttl_for(due, published);
                const auto released = published + ttl;
                ASSERT_GE(released, due) << "early: due " << to_epoch_ms(due) << " late " << late;
                ASSERT_LE(released - std::max(due, planned), Milliseconds{late})
                    << "due " << to_epoch_ms(due) << " late " << late;
            }
        }
    }
}

TEST(DelayLadder, ttl_for_and_publish_at_always_use_rungs_of_the_ladder) {
    const auto ladder = DelayLadder::for_horizon(minutes{5});
    const auto& ttls = ladder.ttls();
    for (std::int64_t left = -5000; left <= 400000; left += 13) {
        const auto due = kNow + Milliseconds{left};
        const auto ttl = ladder.ttl_for(due, kNow);
        ASSERT_NE(std::find(ttls.begin(), ttls.end(), ttl), ttls.end()) << left;
        if (left >= 0) {
            const auto wait = due - ladder.publish_at(due, kNow);
            ASSERT_NE(std::find(ttls.begin(), ttls.end(), wait), ttls.end()) << left;
        }
    }
}

// --- names ----------------------------------------------------------------------------------

TEST(TopologyNames, default_prefix_gives_the_spec_names) {
    const TopologyNames names;
    EXPECT_EQ(names.prefix, "hourglass");
    EXPECT_EQ(names.input, "hourglass.in");
    EXPECT_EQ(names.output, "hourglass.out");
    EXPECT_EQ(names.unroutable, "hourglass.unroutable");
    EXPECT_EQ(names.rejected, "hourglass.rejected");
    EXPECT_EQ(names.release, "hourglass.delay.released");
    EXPECT_EQ(names.copy, "hourglass.delay.copy");
    EXPECT_EQ(names.audit, "hourglass.delay.audit");
    EXPECT_EQ(names.audit_key, "..hourglass.release-copied-to-the-audit..");
    EXPECT_EQ(names.delay(Milliseconds{0}), "hourglass.delay.ttl-0ms");
    EXPECT_EQ(names.delay(Milliseconds{60000}), "hourglass.delay.ttl-60000ms");
    EXPECT_EQ(names.delay(Milliseconds{60000}, 2), "hourglass.delay.ttl-60000ms.2");
    EXPECT_EQ(names.forward, "hourglass.delay.forward");
    EXPECT_EQ(names.forward_delay(Milliseconds{2000}), "hourglass.delay.forward.2000");
}

TEST(TopologyNames, custom_prefix_replaces_hourglass_everywhere) {
    const TopologyNames names("acme.sched");
    EXPECT_EQ(names.prefix, "acme.sched");
    EXPECT_EQ(names.input, "acme.sched.in");
    EXPECT_EQ(names.output, "acme.sched.out");
    EXPECT_EQ(names.unroutable, "acme.sched.unroutable");
    EXPECT_EQ(names.rejected, "acme.sched.rejected");
    EXPECT_EQ(names.release, "acme.sched.delay.released");
    EXPECT_EQ(names.copy, "acme.sched.delay.copy");
    EXPECT_EQ(names.audit, "acme.sched.delay.audit");
    EXPECT_EQ(names.audit_key, "..acme.sched.release-copied-to-the-audit..");
    EXPECT_EQ(names.delay(Milliseconds{2000}), "acme.sched.delay.ttl-2000ms");
}

TEST(TopologyNames, delay_queue_names_are_distinct_for_every_rung) {
    const TopologyNames names;
    const auto ladder = DelayLadder::for_horizon(hours{1});
    std::set<std::string> seen;
    for (const auto ttl : ladder.ttls()) seen.insert(names.delay(ttl));
    EXPECT_EQ(seen.size(), ladder.ttls().size());
    EXPECT_EQ(seen.count(names.release), 0u);
    EXPECT_EQ(seen.count(names.copy), 0u);
    EXPECT_EQ(seen.count(names.audit), 0u);
    // The targeted ladder has as many rungs, and no name in common with anything else.
    for (const auto ttl : ladder.ttls()) seen.insert(names.forward_delay(ttl));
    EXPECT_EQ(seen.size(), 2 * ladder.ttls().size());
    EXPECT_EQ(seen.count(names.forward), 0u);
}

TEST(DelayLanes, one_to_the_maximum_pass_and_the_message_names_the_caller_and_the_count) {
    EXPECT_NO_THROW(check_delay_lanes(1, "topology"));
    EXPECT_NO_THROW(check_delay_lanes(kMaxDelayLanes, "topology"));
    for (const unsigned count : {0u, kMaxDelayLanes + 1}) {
        try {
            check_delay_lanes(count, "loader");
            ADD_FAILURE() << count << " lanes were accepted";
        } catch (const std::invalid_argument& error) {
            EXPECT_EQ(std::string(error.what()),
                      "loader: delay lanes must be 1..16, not " + std::to_string(count));
        }
    }
}

}  // namespace
}  // namespace hourglass::delay
