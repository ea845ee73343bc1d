// The loader over its fakes (loader_fixture.hpp): live leases (renewal, silence, takeover),
// runs set aside, the forward ladder, give-back of refused and failed publishes, rows another
// transaction holds, and the clean stop.
#include <gtest/gtest.h>

#include "unit/loader/loader_fixture.hpp"

namespace hourglass::loader::loader_tests {
namespace {

TEST_F(LoaderTest, publishes_nothing_until_a_heartbeat_has_succeeded) {
    db.add("job", in(0ms));
    db.read([](FakeDatabase& d) { return d.heartbeats_fail = true; });
    start(options());
    ASSERT_TRUE(eventually([&] { return db.claimed("job"); }));
    std::this_thread::sleep_for(300ms);
    EXPECT_TRUE(broker.publishes().empty()) << "no heartbeat yet: its claims are not surely its own";

    db.read([](FakeDatabase& d) { return d.heartbeats_fail = false; });
    EXPECT_TRUE(eventually([&] { return db.handed_over() == 1; }));
}

TEST_F(LoaderTest, stops_publishing_while_heartbeats_fail_and_keeps_its_claims_if_nobody_took_them) {
    db.add("first", in(100ms));
    db.add("second", in(700ms));
    start(options());
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    ASSERT_TRUE(db.claimed("second")) << "claimed within the horizon, waiting in memory";

    // The database goes out of reach for longer than the takeover time: "second" comes due
    // meanwhile, but another instance may have taken it over, so this one must not publish it.
    db.set_reachable(false);
    const auto silent_from = clock();
    std::this_thread::sleep_for(1200ms);
    EXPECT_EQ(broker.publishes().size(), 1u) << "published while its heartbeat was failing";

    // Back in reach, still registered (nobody took it for dead): it publishes what it held,
    // late and once, without giving its claims back.
    db.set_reachable(true);
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 2; }, 5s));
    EXPECT_EQ(db.read([](const FakeDatabase& d) { return d.release_all_calls; }), 0);
    const auto publishes = broker.publishes();
    ASSERT_EQ(publishes.size(), 2u);
    EXPECT_GT(publishes[1].at, silent_from + 1200ms);
}

// A run AMQP cannot carry (a content type of 300 bytes in a row written by hand) failed its
// publish batch again and again: one row stopped every release. It is set aside alone, with
// its reason, and the runs beside it are released.
TEST_F(LoaderTest, a_run_amqp_cannot_carry_is_set_aside_alone_and_the_others_are_released) {
    ClaimedRun poison;
    poison.id = "poison";
    poison.routing_key = "rk.poison";
    poison.due_at = in(200ms);
    poison.properties.content_type = std::string(300, 'c');
    db.add(std::move(poison));
    ClaimedRun long_name;
    long_name.id = "long-name";
    long_name.routing_key = "rk.long";
    long_name.due_at = in(200ms);
    long_name.properties.headers = FieldTable{{"t", FieldTable{{std::string(300, 'n'), 1}}}};
    db.add(std::move(long_name));
    for (int i = 0; i < 5; ++i) db.add("good-" + std::to_string(i), in(200ms));
    start(options());
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 7; }));
    std::this_thread::sleep_for(200ms);
    std::set<std::string> published;
    for (const auto& publish : broker.publishes()) published.insert(header_text(publish.message, header::kId));
    EXPECT_EQ(published, (std::set<std::string>{"good-0", "good-1", "good-2", "good-3", "good-4"}));
    const auto [ids, reasons] = db.read([](const FakeDatabase& d) { return std::pair(d.set_aside, d.set_aside_reasons); });
    EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()), (std::set<std::string>{"poison", "long-name"}));
    for (const auto& reason : reasons) EXPECT_NE(reason.find("AMQP holds at most 255"), std::string::npos) << reason;
    EXPECT_EQ(metric("hourglass_runs_set_aside_total"), 2);
}

// Fencing (issue: an instance taken for dead kept publishing): another instance deletes this
// one's registration and gives its claims back while it holds them in memory. Its next beat
// finds no registration: it drops what it holds, registers again and claims anew, so each run
// is published once (before the fix its beat re-created the row, and it published its
// in-memory copy beside the one claimed again).
TEST_F(LoaderTest, an_instance_taken_for_dead_drops_what_it_holds_and_publishes_each_run_once) {
    for (int i = 0; i < 20; ++i) db.add("held-" + std::to_string(i), in(800ms));
    start(options());
    ASSERT_TRUE(eventually([&] {
        return db.read([](const FakeDatabase& d) {
            return std::all_of(d.rows.begin(), d.rows.end(), [](const auto& r) { return !r.second.owner.empty(); });
        });
    }));
    db.take_over("instance-a");
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 20; }, 5s));
    std::this_thread::sleep_for(300ms);
    std::map<std::string, int> publishes_per_run;
    for (const auto& publish : broker.publishes()) ++publishes_per_run[header_text(publish.message, header::kId)];
    EXPECT_EQ(publishes_per_run.size(), 20u);
    for (const auto& [id, count] : publishes_per_run) EXPECT_EQ(count, 1) << id;
    EXPECT_EQ(metric("hourglass_registration_lost_total"), 1);
    EXPECT_TRUE(db.read([](const FakeDatabase& d) { return d.registered.contains("instance-a"); }))
        << "registered again";
}

// Reconciliation (issue: a lost commit reply parked runs under a live owner): a row leased to
// this instance that its loader does not hold (an insert or a claim whose COMMIT succeeded but
// whose reply was lost) is given back after the orphan age, then claimed and released.
TEST_F(LoaderTest, a_run_leased_to_this_instance_that_it_does_not_hold_is_given_back_and_released) {
    start(options());
    ASSERT_TRUE(eventually([&] { return db.read([](const FakeDatabase& d) { return d.heartbeats > 0; }); }));
    ClaimedRun orphan;
    orphan.id = "orphan";
    orphan.routing_key = "rk.orphan";
    orphan.due_at = in(200ms);
    db.add(orphan, "instance-a");
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }, 3s)) << "parked under a live owner";
    EXPECT_EQ(broker.publishes().size(), 1u);
    EXPECT_EQ(metric("hourglass_orphaned_claims_total"), 1);
}

// Runs it holds, however long, are never taken for orphans.
TEST_F(LoaderTest, runs_held_longer_than_the_orphan_age_are_not_given_back) {
    for (int i = 0; i < 10; ++i) db.add("long-" + std::to_string(i), in(1500ms));
    start(options());
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 10; }, 5s));
    EXPECT_EQ(broker.publishes().size(), 10u);
    EXPECT_EQ(metric("hourglass_orphaned_claims_total"), 0);
    EXPECT_TRUE(db.read([](const FakeDatabase& d) { return d.released.empty(); }));
}

TEST_F(LoaderTest, a_silence_shorter_than_the_publish_grace_changes_nothing) {
    db.add("job", in(600ms));
    start(options());
    ASSERT_TRUE(eventually([&] { return db.claimed("job"); }));
    db.set_reachable(false);
    std::this_thread::sleep_for(60ms);  // < publish_grace
    db.set_reachable(true);
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    EXPECT_EQ(db.read([](const FakeDatabase& d) { return d.release_all_calls; }), 0);
    EXPECT_EQ(broker.publishes().size(), 1u);
}

// An instance that does not accept targets starts without the forward ladder (--allow-exchange,
// src/delay/topology.hpp); a targeted run stored earlier or by another instance still goes out.
TEST_F(LoaderTest, declares_the_forward_ladder_once_before_the_first_targeted_run_it_publishes) {
    broker.forward_ladder_exists = false;
    auto without_ladder = options();
    without_ladder.topology.forward_ladder = false;
    db.add("untargeted", in(200ms));
    start(std::move(without_ladder));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    std::this_thread::sleep_for(100ms);  // several claims
    {
        std::lock_guard lock(broker.mutex);
        EXPECT_EQ(broker.forward_ladder_declarations, 0) << "no targeted run, no forward ladder";
    }

    // Two claims with targeted runs: the first declares, the second finds it declared.
    for (const std::string id : {"targeted-1", "targeted-2"}) {
        db.add_targeted(id, in(300ms));
        ASSERT_TRUE(eventually([&] { return db.claimed(id) || db.handed_over() == 3; }));
    }
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 3; }));
    std::lock_guard lock(broker.mutex);
    EXPECT_EQ(broker.forward_ladder_declarations, 1);
    EXPECT_EQ(broker.publishes_to_missing_exchanges, 0);
    EXPECT_EQ(broker.channels_opened, 1);
    ASSERT_EQ(broker.published.size(), 3u);
    for (std::size_t i = 1; i < 3; ++i) {
        EXPECT_TRUE(broker.published[i].message.exchange.starts_with(names.forward + "."))
            << broker.published[i].message.exchange;
    }
}

TEST_F(LoaderTest, an_instance_that_declared_the_forward_ladder_at_start_never_declares_it) {
    db.add_targeted("targeted", in(200ms));
    start(options());  // topology.forward_ladder: declared with the rest at start
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    std::lock_guard lock(broker.mutex);
    EXPECT_EQ(broker.forward_ladder_declarations, 0);
}

// The broker unreachable for the declaration: the targeted run goes back to the store and waits
// for the next poll's claim, the others are published meanwhile, and nothing is published into
// a ladder that does not exist.
TEST_F(LoaderTest, a_forward_ladder_it_cannot_declare_holds_back_only_the_targeted_runs) {
    broker.forward_ladder_exists = false;
    broker.forward_ladder_failures = 3;
    auto without_ladder = options();
    without_ladder.topology.forward_ladder = false;
    db.add_targeted("targeted", in(500ms));
    db.add("untargeted", in(100ms));
    start(std::move(without_ladder));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 2; }));
    const auto released = db.read([](const FakeDatabase& d) { return d.released; });
    EXPECT_EQ(std::count(released.begin(), released.end(), "targeted"), 3);
    EXPECT_EQ(std::count(released.begin(), released.end(), "untargeted"), 0);
    std::lock_guard lock(broker.mutex);
    EXPECT_EQ(broker.forward_ladder_declarations, 4);
    EXPECT_EQ(broker.publishes_to_missing_exchanges, 0);
    EXPECT_EQ(broker.channels_opened, 1);
    EXPECT_EQ(broker.published.size(), 2u);
}

// A broker that stalls the declaration (a connection it never answers) holds up the targeted
// runs only: the claims of the others go on, and one declaration is under way at a time.
TEST_F(LoaderTest, a_stalled_forward_ladder_declaration_holds_up_no_other_run) {
    broker.forward_ladder_exists = false;
    broker.forward_ladder_stalls = true;
    auto without_ladder = options();
    without_ladder.topology.forward_ladder = false;
    without_ladder.forward_ladder_wait = 50ms;
    db.add_targeted("targeted", in(1500ms));
    start(std::move(without_ladder));
    ASSERT_TRUE(eventually([&] {
        std::lock_guard lock(broker.mutex);
        return broker.forward_ladder_declarations == 1;
    }));
    db.add("untargeted", in(300ms));  // claimed while the declaration is stalled
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    EXPECT_FALSE(db.read([](const FakeDatabase& d) { return d.rows.at("targeted").handed_over; }));
    const auto given_back = db.read([](const FakeDatabase& d) {
        return std::count(d.released.begin(), d.released.end(), "targeted");
    });
    EXPECT_GE(given_back, 2) << "claimed again and again while the declaration is under way";

    broker.unstall_forward_ladder();
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 2; }));
    std::lock_guard lock(broker.mutex);
    EXPECT_EQ(broker.forward_ladder_declarations, 1) << "one declaration at a time";
    EXPECT_EQ(broker.publishes_to_missing_exchanges, 0);
}

TEST_F(LoaderTest, a_run_the_broker_refuses_goes_back_to_the_store_and_is_claimed_again) {
    broker.answer_next({FakeBroker::Answer::nack});
    db.add("job", in(0ms));
    start(options());
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    EXPECT_EQ(db.read([](const FakeDatabase& d) { return d.released; }),
              std::vector<std::string>{"job"});
    EXPECT_EQ(broker.publishes().size(), 2u) << "refused once, then published again";
}

TEST_F(LoaderTest, a_publish_that_fails_gives_back_the_rest_of_its_batch_and_reconnects) {
    for (int i = 0; i < 5; ++i) db.add("job-" + std::to_string(i), in(0ms));
    broker.answer_next({FakeBroker::Answer::ack, FakeBroker::Answer::fail});
    start(options());
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 5; }));
    // The run published before the failure lost its confirm with the connection: it goes back
    // too and is published again (at least once, reference §6), with the one that failed and the
    // three after it.
    const auto released = db.read([](const FakeDatabase& d) { return d.released; });
    EXPECT_EQ(released.size(), 5u);
    std::lock_guard lock(broker.mutex);
    EXPECT_EQ(broker.channels_opened, 2);
    std::set<std::string> ids;
    for (const auto& publish : broker.published) ids.insert(header_text(publish.message, header::kId));
    EXPECT_EQ(ids.size(), 5u);
    EXPECT_EQ(broker.published.size(), 6u) << "only the unconfirmed run twice";
}

TEST_F(LoaderTest, a_clean_stop_gives_back_unpublished_claims_and_leaves) {
    db.add("due-later", in(1500ms));
    start(options());
    ASSERT_TRUE(eventually([&] { return db.claimed("due-later"); }));
    stop();
    EXPECT_FALSE(db.claimed("due-later"));
    EXPECT_TRUE(broker.publishes().empty());
    EXPECT_EQ(db.read([](const FakeDatabase& d) { return d.leaves; }), 1);
}

// An operator's transaction holds a claimed run's row (JobStore::record_handed_over never waits
// for it): the runs confirmed with it and after it are recorded, it is tried again with a
// backoff, not in a loop, and recorded once the row is free.
TEST_F(LoaderTest, a_run_whose_row_another_transaction_holds_holds_up_no_other_record) {
    db.read([](FakeDatabase& d) { d.locked.insert("held"); });
    db.add("held", in(200ms));
    db.add("with-it", in(200ms));
    db.add("after-it", in(900ms));
    start(options());
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 2; }));
    EXPECT_TRUE(db.claimed("held"));
    // The loader sets its metrics just after the store call that the fake counts in.
    ASSERT_TRUE(eventually([&] { return metric("hourglass_handovers_waiting") == 1; }));
    ASSERT_TRUE(eventually([&] { return metric("hourglass_runs_enqueued_total") == 2; }));
    const auto records = db.read([](const FakeDatabase& d) { return d.records; });
    std::this_thread::sleep_for(1s);
    // Tried again after 250, then 500 ms (and at most a record of another run meanwhile).
    EXPECT_LE(db.read([](const FakeDatabase& d) { return d.records; }) - records, 3);

    db.read([](FakeDatabase& d) { d.locked.clear(); });
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 3; }, 5s));
    EXPECT_TRUE(eventually([&] { return metric("hourglass_handovers_waiting") == 0; }));
    EXPECT_TRUE(eventually([&] { return loader->runs_handed_over() == 3u; }));
}

// A run the broker refused goes back to the store; when another transaction holds its row, it
// is given back later, and the claims of other runs go on meanwhile.
TEST_F(LoaderTest, a_refused_run_whose_row_another_transaction_holds_holds_up_no_claim) {
    db.read([](FakeDatabase& d) { d.locked.insert("refused"); });
    broker.answer_next({FakeBroker::Answer::nack});
    db.add("refused", in(200ms));
    start(options());
    ASSERT_TRUE(eventually([&] { return broker.publishes().size() == 1; }));
    db.add("later", in(400ms));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    EXPECT_TRUE(db.claimed("refused")) << "not given back while its row is held";

    EXPECT_TRUE(db.read([](const FakeDatabase& d) { return d.orphans_released.empty(); }))
        << "nor as an orphan (the heartbeat passes held rows by)";

    db.read([](FakeDatabase& d) { d.locked.clear(); });
    // Given back (by the claimer's retry, or as an orphan by the heartbeat: whichever looks
    // first), claimed again and handed over.
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 2; }, 5s));
    db.read([](const FakeDatabase& d) {
        std::vector<std::string> given_back = d.released;
        given_back.insert(given_back.end(), d.orphans_released.begin(), d.orphans_released.end());
        EXPECT_NE(std::find(given_back.begin(), given_back.end(), "refused"), given_back.end());
    });
}

// A stop does not wait for the lock: the run stays claimed, for the next instance to take over.
TEST_F(LoaderTest, a_clean_stop_leaves_a_run_whose_row_another_transaction_holds_unrecorded) {
    db.read([](FakeDatabase& d) { d.locked.insert("held"); });
    db.add("held", in(200ms));
    start(options());
    ASSERT_TRUE(eventually([&] { return metric("hourglass_handovers_waiting") == 1; }));
    const auto asked = std::chrono::steady_clock::now();
    stop();
    EXPECT_LT(std::chrono::steady_clock::now() - asked, 1s);
    EXPECT_EQ(db.handed_over(), 0u);
    EXPECT_EQ(db.read([](const FakeDatabase& d) { return d.leaves; }), 1);
}

}  // namespace
}  // namespace hourglass::loader::loader_tests
