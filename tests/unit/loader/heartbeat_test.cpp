// The heartbeat stage (src/loader/heartbeat.hpp) on a fake store and a clock the test moves:
// what a beat tells the lease keeper, fencing seen from the fenced side, the pace and the rule
// of orphan reconciliation, and the one clock following PostgreSQL's.
#include "loader/heartbeat.hpp"

#include <gtest/gtest.h>

#include "common/metrics.hpp"
#include "support/fake_claim_store.hpp"
#include "support/manual_clock.hpp"

namespace hourglass::loader {
namespace {

using namespace std::chrono_literals;
using testing::FakeDatabase;
using testing::FakeStore;

class HeartbeatTest : public ::testing::Test {
protected:
    HeartbeatTest() {
        db_.steady_now = [this] { return clock_.steady(); };
    }
    Heartbeat::Options options() const {
        return {.owner = "me", .claim_lease = 30s, .max_clock_offset = 1000ms};
    }
    // One round of the stage, as its thread runs it every heartbeat_every.
    void beat() { heartbeat_.beat(store_); }
    // A run leased to `owner` now, on the manual clock.
    void lease(const std::string& id, const std::string& owner = "me") {
        ClaimedRun run;
        run.id = id;
        run.due_at = clock_.wall_ms() + 10s;
        db_.add(std::move(run), owner);
    }
    bool claim_asked() { return doorbell_.take_claim_asked(); }

    struct Clock : testing::ManualClock {
        TimePoint wall_ms() const { return std::chrono::time_point_cast<Milliseconds>(wall()); }
    } clock_;
    FakeDatabase db_;
    FakeStore store_{db_};
    LeaseKeeper leases_;
    HeldRuns held_;
    ScheduleBoard board_{MemoryBounds{}};
    InsertClaimDesk insert_claims_{board_};
    ClaimerDoorbell doorbell_;
    metrics::ServiceMetrics service_metrics_;
    LoaderMetrics metrics_{service_metrics_.registry()};
    DatabaseClock database_clock_;
    Heartbeat heartbeat_{options(),
                         {.leases = leases_,
                          .held = held_,
                          .insert_claims = insert_claims_,
                          .claimer = doorbell_,
                          .metrics = metrics_,
                          .database_clock = database_clock_},
                         StageClock{.now_us = [this] { return clock_.wall(); },
                                    .steady = [this] { return clock_.steady(); }}};
};

TEST_F(HeartbeatTest, registers_then_lets_the_publisher_publish_for_the_grace_after_each_beat) {
    EXPECT_FALSE(leases_.may_publish(clock_.steady()));
    beat();
    EXPECT_TRUE(db_.registered.contains("me"));
    const auto beaten = clock_.steady();
    EXPECT_TRUE(leases_.may_publish(beaten + kPublishGrace - 1ms));
    EXPECT_FALSE(leases_.may_publish(beaten + kPublishGrace));
    clock_.advance(kHeartbeatEvery);
    beat();
    EXPECT_TRUE(leases_.may_publish(beaten + kPublishGrace));
}

// The database stamps a beat when it runs it: counting the grace from the reply would let this
// instance believe itself fresher than the others see it.
TEST_F(HeartbeatTest, counts_the_grace_from_when_a_beat_was_sent_not_from_its_reply) {
    beat();
    clock_.advance(1s);
    const auto sent = clock_.steady();
    db_.during_heartbeat = [this] { clock_.advance(1500ms); };  // a slow round trip
    beat();
    EXPECT_TRUE(leases_.may_publish(sent + kPublishGrace - 1ms));
    EXPECT_FALSE(leases_.may_publish(sent + kPublishGrace)) << "only 500 ms after the reply";
}

TEST_F(HeartbeatTest, a_beat_that_fails_extends_nothing) {
    beat();
    const auto beaten = clock_.steady();
    clock_.advance(1s);
    db_.heartbeats_fail = true;
    EXPECT_THROW(beat(), std::runtime_error);
    EXPECT_FALSE(leases_.may_publish(beaten + kPublishGrace));
}

TEST_F(HeartbeatTest, a_fenced_instance_drops_its_claims_and_registers_only_once_they_are_forgotten) {
    beat();
    db_.take_over("me");  // another instance fenced this one
    clock_.advance(1s);
    beat();
    EXPECT_TRUE(leases_.claims_lost());
    EXPECT_FALSE(leases_.may_publish(clock_.steady()));
    EXPECT_TRUE(claim_asked()) << "the claimer drops what it holds at once";
    clock_.advance(1s);
    beat();
    EXPECT_FALSE(db_.registered.contains("me")) << "registered while it still held others' runs";
    leases_.claims_forgotten();  // what the claimer does once it dropped them
    clock_.advance(1s);
    beat();
    EXPECT_TRUE(db_.registered.contains("me"));
    EXPECT_TRUE(leases_.may_publish(clock_.steady()));
}

TEST_F(HeartbeatTest, gives_back_a_lease_it_does_not_hold_once_older_than_the_orphan_age) {
    beat();  // the first round reconciles: nothing yet
    lease("orphan");
    lease("held");
    held_.add(std::vector<std::string>{"held"});
    lease("other's", "someone else");
    clock_.advance(kReconcileEvery);
    beat();
    EXPECT_TRUE(db_.orphans_released.empty()) << "younger than the orphan age";
    clock_.advance(kOrphanAge - kReconcileEvery + 1ms);
    beat();
    EXPECT_EQ(db_.orphans_released, std::vector<std::string>{"orphan"});
    EXPECT_TRUE(db_.claimed("held"));
    EXPECT_TRUE(db_.claimed("other's"));
    EXPECT_TRUE(claim_asked()) << "the orphan is claimable at once";
}

TEST_F(HeartbeatTest, reconciles_every_reconcile_interval_not_at_every_beat) {
    beat();  // reconciles: the next one is due a reconcile interval later
    lease("orphan");
    db_.read([&](FakeDatabase& db) {
        db.rows.at("orphan").claimed_at = clock_.steady() - kOrphanAge - 1s;  // old already
        return 0;
    });
    clock_.advance(kHeartbeatEvery);
    beat();
    clock_.advance(kReconcileEvery - kHeartbeatEvery - 1ms);
    beat();
    EXPECT_TRUE(db_.orphans_released.empty()) << "reconciled before the interval passed";
    clock_.advance(1ms);
    beat();
    EXPECT_EQ(db_.orphans_released, std::vector<std::string>{"orphan"});
}

// Ingest may have committed part of a batch leased under an offer and wait on a locked row for
// the rest: no lease younger than the oldest open offer is an orphan.
TEST_F(HeartbeatTest, no_lease_younger_than_an_offer_ingest_has_not_ended_is_an_orphan) {
    insert_claims_.set_open(true);
    const auto offer = insert_claims_.offer(
        InsertClaimOffer{.owner = "me", .lease = 30s, .horizon_end = clock_.wall_ms() + 60s,
                         .made_at = clock_.wall_ms()},
        10, 1 << 20);
    ASSERT_TRUE(offer);
    clock_.advance(1s);
    lease("under the offer");
    clock_.advance(kOrphanAge + 5s);  // older than the orphan age, younger than the offer + 1 s
    beat();
    EXPECT_TRUE(db_.orphans_released.empty());
    insert_claims_.adopt(*offer, {});  // ingest's transaction ended without it
    clock_.advance(kReconcileEvery);
    beat();
    EXPECT_EQ(db_.orphans_released, std::vector<std::string>{"under the offer"});
}

TEST_F(HeartbeatTest, each_beat_sets_the_one_clock_to_postgresqls) {
    db_.clock_offset = 3s;
    beat();
    EXPECT_EQ(database_clock_.offset(), 3s);
    db_.clock_offset = -250ms;
    clock_.advance(1s);
    beat();
    EXPECT_EQ(database_clock_.offset(), -250ms);
}

}  // namespace
}  // namespace hourglass::loader
