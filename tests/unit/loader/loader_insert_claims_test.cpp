// The loader over its fakes (loader_fixture.hpp): runs claimed at insert, under ingest's offers.
#include <gtest/gtest.h>

#include "unit/loader/loader_fixture.hpp"

namespace hourglass::loader::loader_tests {
namespace {

// Claims at insert (InsertClaimOffer): what ingest does with an offer, inserting the job leased
// to the loader and handing it over after the commit.
class LoaderInsertClaims : public LoaderTest {
protected:
    static ClaimedRun run_due(const std::string& id, TimePoint due) {
        ClaimedRun run;
        run.id = id;
        run.routing_key = "rk." + id;
        run.body = "body of " + id;
        run.due_at = due;
        return run;
    }
    void insert_leased(const InsertClaimOffer& offer, const std::vector<ClaimedRun>& runs) {
        for (const auto& run : runs) db.add(run, offer.owner);
        loader->adopt_insert_claims(offer, runs);
    }
    std::optional<InsertClaimOffer> offer_when_open(std::size_t runs = 10,
                                                    std::size_t bytes = 1u << 20) {
        std::optional<InsertClaimOffer> offer;
        eventually([&] { return (offer = loader->offer_insert_claims(runs, bytes)).has_value(); });
        return offer;
    }
};

TEST_F(LoaderInsertClaims, a_run_claimed_at_insert_is_handed_over_on_time_without_a_claim) {
    start(options());
    const auto offer = offer_when_open();
    ASSERT_TRUE(offer) << "no offer once the loader claims with no backlog";
    EXPECT_EQ(offer->owner, "instance-a");
    EXPECT_EQ(offer->runs, 10u);
    EXPECT_GE(offer->horizon_end, in(2s) - 100ms);
    EXPECT_LE(offer->horizon_end, in(2s));
    const auto due = in(400ms);
    // Leased to the loader in the store: no claim can take it (FakeStore::claim_due skips it).
    insert_leased(*offer, {run_due("fresh", due)});
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    const auto publishes = broker.publishes();
    ASSERT_EQ(publishes.size(), 1u);
    EXPECT_GE(released_at(publishes[0]), due);
    EXPECT_LE(released_at(publishes[0]), due + 500ms);  // loose: CI machines are busy
    EXPECT_EQ(publishes[0].message.body, "body of fresh");
    EXPECT_EQ(metric("hourglass_runs_claimed_at_insert_total"), 1);
}

// Runs leased under an offer ingest has not ended yet (the first part of its batch committed,
// a later part waiting for a locked row) are not orphans, however long the wait: given back,
// they were claimed and published, and published again once ingest handed them over.
TEST_F(LoaderInsertClaims, runs_leased_under_an_offer_still_open_are_never_taken_for_orphans) {
    start(options());  // orphan age 300 ms, a reconciliation every 50 ms
    const auto offer = offer_when_open();
    ASSERT_TRUE(offer);
    const auto due = in(1500ms);
    db.add(run_due("first-part", due), offer->owner);
    std::this_thread::sleep_for(800ms);
    EXPECT_TRUE(db.read([](const FakeDatabase& d) { return d.orphans_released.empty(); }))
        << "given back while ingest still held its offer";
    loader->adopt_insert_claims(*offer, {run_due("first-part", due)});
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(broker.publishes().size(), 1u);
    EXPECT_TRUE(db.read([](const FakeDatabase& d) { return d.orphans_released.empty(); }));
}

// The room an open offer reserves is not claimed meanwhile, and an offer never exceeds what the
// memory bounds have left.
TEST_F(LoaderInsertClaims, an_offer_reserves_its_room_until_ingest_ends_it) {
    auto limited = options();
    limited.max_in_memory_runs = 5;
    start(std::move(limited));
    const auto offer = offer_when_open(100);
    ASSERT_TRUE(offer);
    EXPECT_EQ(offer->runs, 5u);
    EXPECT_FALSE(loader->offer_insert_claims(1, 100)) << "the room is reserved";
    // Meanwhile due runs in the store wait for the room, as they would for runs in memory.
    for (int i = 0; i < 3; ++i) db.add("stored-" + std::to_string(i), in(300ms));
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(db.claimed("stored-0"));
    loader->adopt_insert_claims(*offer, {});  // the batch failed: nothing was leased
    EXPECT_TRUE(eventually([&] { return db.handed_over() == 3; }));
}

// A hotspot accepted over many small ingest batches (each a run) counts as a burst as it does
// when claimed: the runs claimed at insert are scheduled with the next claim, as one batch.
TEST_F(LoaderInsertClaims, runs_of_one_instant_claimed_at_insert_one_by_one_count_toward_a_burst) {
    auto loader_options = options();
    loader_options.horizon = 4s;
    loader_options.poll_interval = 1s;
    loader_options.burst_min_runs = 10;
    start(std::move(loader_options));
    std::vector<InsertClaimOffer> offers;
    for (int i = 0; i < 12; ++i) {
        const auto offer = offer_when_open(1);
        ASSERT_TRUE(offer);
        offers.push_back(*offer);
    }
    const auto due = in(3500ms);  // not due before the next claim: no wake
    for (int i = 0; i < 12; ++i) insert_leased(offers[i], {run_due("hot-" + std::to_string(100 + i), due)});
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 12; }, 6s));
    // All twelve, unless a claim fell between two adoptions: then a lone first run is no burst.
    EXPECT_GE(metric("hourglass_burst_runs_total"), 11);
    EXPECT_EQ(metric("hourglass_runs_claimed_at_insert_total"), 12);
    for (const auto& publish : broker.publishes()) EXPECT_GE(publish.at, due - ladder->step());
}

// Runs waiting in the store for room are due first: no offer while a claim stops at its limit.
TEST_F(LoaderInsertClaims, no_offer_while_due_runs_wait_in_the_store_for_room) {
    for (int i = 0; i < 40; ++i) db.add("backlog-" + std::to_string(100 + i), in(1500ms));
    auto limited = options();
    limited.max_in_memory_runs = 10;
    limited.claim_batch = 10;
    start(std::move(limited));
    ASSERT_TRUE(eventually([&] { return loader->in_memory_runs() == 10; }));
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(loader->offer_insert_claims(1, 100));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 40; }, 5s));
    EXPECT_TRUE(offer_when_open()) << "offers resume once the store's due runs are in hand";
}

// An insert that commits after the loader forgot its claims (PostgreSQL out of its reach for
// the takeover time) may hold runs others took over meanwhile: they are given back, not
// published, then claimed again like any.
TEST_F(LoaderInsertClaims, runs_leased_under_an_offer_made_before_the_loader_forgot_its_claims_are_given_back) {
    start(options());
    const auto offer = offer_when_open();
    ASSERT_TRUE(offer);
    db.set_reachable(false);
    std::this_thread::sleep_for(200ms);  // past the publish grace (150 ms)
    EXPECT_FALSE(loader->offer_insert_claims(1, 100)) << "offered while its heartbeat is stale";
    db.take_over("instance-a");  // another instance took it for dead meanwhile
    db.set_reachable(true);
    // Registered again: it forgot its claims first.
    ASSERT_TRUE(eventually([&] { return db.read([](const FakeDatabase& d) { return d.registered.contains("instance-a"); }); }));
    insert_leased(*offer, {run_due("late-commit", in(500ms))});
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    const auto released = db.read([](const FakeDatabase& d) { return d.released; });
    EXPECT_NE(std::find(released.begin(), released.end(), "late-commit"), released.end())
        << "handed over without being given back first";
    EXPECT_EQ(broker.publishes().size(), 1u);
    EXPECT_EQ(metric("hourglass_runs_claimed_at_insert_total"), 0);
}

// A clean stop waits for ingest's open offer: what it leased is given back, never left leased to
// an instance that left.
TEST_F(LoaderInsertClaims, a_clean_stop_waits_for_an_open_offer_and_gives_back_what_it_leased) {
    start(options());
    const auto offer = offer_when_open();
    ASSERT_TRUE(offer);
    std::jthread stopper([this] { stop(); });
    std::this_thread::sleep_for(150ms);
    EXPECT_FALSE(loader->offer_insert_claims(1, 100)) << "offered while stopping";
    insert_leased(*offer, {run_due("committed-at-the-stop", in(1500ms))});
    stopper.join();
    EXPECT_FALSE(db.claimed("committed-at-the-stop"));
    EXPECT_TRUE(broker.publishes().empty());
}

}  // namespace
}  // namespace hourglass::loader::loader_tests
