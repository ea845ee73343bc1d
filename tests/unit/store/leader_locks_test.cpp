// LeaderLockWatch: when a task skipped because its leader lock is held elsewhere is worth a
// warning, on a clock the test moves.
#include "store/leader_locks.hpp"

#include <gtest/gtest.h>

namespace hourglass::store {
namespace {

using namespace std::chrono_literals;

LeaderLockHolder holder(std::string lock, std::string transaction,
                        std::optional<Milliseconds> open_for = std::nullopt) {
    return {.lock = std::move(lock),
            .transaction_id = std::move(transaction),
            .pid = 4242,
            .role = "hourglass",
            .application = "psql",
            .state = "idle in transaction",
            .open_for = open_for};
}

class LeaderLocks : public ::testing::Test {
protected:
    LeaderLockWatch watch{"sql_intake", "SQL intake", "no command is taken", 30s, 300s};
    LeaderLockWatch::Clock::time_point now{};
};

TEST_F(LeaderLocks, one_transaction_holding_the_lock_past_the_limit_is_named_once_then_every_repeat) {
    const std::vector<LeaderLockHolder> held{holder("prune", "7"), holder("sql_intake", "9")};
    EXPECT_FALSE(watch.held_elsewhere(held, now));
    now += 29s;
    EXPECT_FALSE(watch.held_elsewhere(held, now));
    now += 1s;
    const auto warning = watch.held_elsewhere(held, now);
    ASSERT_TRUE(warning);
    EXPECT_EQ(*warning,
              "SQL intake: no command is taken while another transaction holds the leader lock "
              "'sql_intake' (its row in leader_locks), for 30 s so far: pid 4242 (role hourglass, "
              "application psql, idle in transaction). End that transaction if it is not meant to "
              "last (SELECT pg_terminate_backend(4242))");
    now += 299s;
    EXPECT_FALSE(watch.held_elsewhere(held, now));
    now += 1s;
    EXPECT_TRUE(watch.held_elsewhere(held, now));
    now += 10s;
    EXPECT_EQ(watch.taken(now), "SQL intake: the leader lock 'sql_intake' is free again after at "
                                "least 340 s; going on");
    EXPECT_FALSE(watch.taken(now)) << "said once";
}

TEST_F(LeaderLocks, instances_taking_turns_with_the_lock_are_never_a_warning) {
    for (int batch = 0; batch < 100; ++batch) {
        EXPECT_FALSE(watch.held_elsewhere({holder("sql_intake", std::to_string(batch))}, now));
        now += 1s;
    }
    EXPECT_FALSE(watch.taken(now));
}

TEST_F(LeaderLocks, a_transaction_postgresql_shows_open_long_is_named_at_once) {
    EXPECT_TRUE(watch.held_elsewhere({holder("sql_intake", "9", 45s)}, now));
    EXPECT_FALSE(watch.held_elsewhere({holder("sql_intake", "9", 46s)}, now + 1s));
}

TEST_F(LeaderLocks, only_its_own_lock_counts_and_a_holder_gone_before_the_read_changes_nothing) {
    EXPECT_FALSE(watch.held_elsewhere({holder("sql_intake", "9")}, now));
    now += 20s;
    EXPECT_FALSE(watch.held_elsewhere({holder("prune", "9", 600s)}, now));
    EXPECT_FALSE(watch.held_elsewhere({}, now));
    now += 10s;
    EXPECT_TRUE(watch.held_elsewhere({holder("sql_intake", "9")}, now)) << "seen since 30 s ago";
}

TEST_F(LeaderLocks, a_new_holder_starts_the_count_again) {
    EXPECT_FALSE(watch.held_elsewhere({holder("sql_intake", "9")}, now));
    now += 25s;
    EXPECT_FALSE(watch.held_elsewhere({holder("sql_intake", "10")}, now));
    now += 25s;
    EXPECT_FALSE(watch.held_elsewhere({holder("sql_intake", "10")}, now));
    now += 5s;
    EXPECT_TRUE(watch.held_elsewhere({holder("sql_intake", "10")}, now));
}

// A store whose holders are `holders`, counting the reads.
struct FakeLeaderLockStore : LeaderLockStore {
    std::vector<LeaderLockHolder> holders;
    int reads = 0;
    std::vector<LeaderLockHolder> leader_lock_holders() override {
        ++reads;
        return holders;
    }
};

// A second instance finds the intake held at many attempts while the first takes: it reads
// who holds it once a second at most, and not at all while it takes the lock itself.
TEST_F(LeaderLocks, the_holders_are_read_at_most_once_a_second_and_only_when_held_elsewhere) {
    FakeLeaderLockStore store;
    store.holders = {holder("sql_intake", "9")};
    for (int attempt = 0; attempt < 100; ++attempt) {
        watch.log(true, store, now);
        now += 10ms;
    }
    EXPECT_EQ(store.reads, 1);
    now += 1s;
    watch.log(true, store, now);
    EXPECT_EQ(store.reads, 2);
    for (int attempt = 0; attempt < 100; ++attempt) watch.log(false, store, now += 1s);
    EXPECT_EQ(store.reads, 2);
}

TEST_F(LeaderLocks, a_holder_is_described_with_what_postgresql_shows) {
    EXPECT_EQ(describe(holder("prune", "1", 61s)),
              "pid 4242 (role hourglass, application psql, idle in transaction, open 61 s)");
    LeaderLockHolder hidden{.lock = "prune", .transaction_id = "1", .pid = 7, .role = "", .application = "",
                            .state = "", .open_for = std::nullopt};
    EXPECT_EQ(describe(hidden), "pid 7 (role ?)");
}

}  // namespace
}  // namespace hourglass::store
