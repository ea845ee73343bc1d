// The loader over its fakes (loader_fixture.hpp): hand-over on time and its records, release
// groups and lanes, and the clock it compares due times on.
#include <gtest/gtest.h>

#include "unit/loader/loader_fixture.hpp"

namespace hourglass::loader::loader_tests {
namespace {

TEST_F(LoaderTest, hands_over_runs_due_within_the_horizon_on_time_and_records_them) {
    db.add("soon", in(300ms));
    db.add("later", in(1200ms));
    db.add("beyond-the-horizon", in(10min));
    start(options());

    ASSERT_TRUE(eventually([&] { return db.handed_over() == 2; }));
    EXPECT_FALSE(db.claimed("beyond-the-horizon"));
    const auto publishes = broker.publishes();
    ASSERT_EQ(publishes.size(), 2u);
    for (const auto& publish : publishes) {
        const auto id = header_text(publish.message, header::kId);
        const auto due = db.read([&](const FakeDatabase& d) { return d.rows.at(id).run.due_at; });
        // Released by the broker at its due time on the one clock: never early, never much late.
        EXPECT_GE(released_at(publish), due) << id;
        EXPECT_LE(released_at(publish), due + 500ms) << id;  // loose: CI machines are busy
        EXPECT_EQ(publish.message.routing_key, "rk." + id);
        EXPECT_EQ(publish.message.body, "body of " + id);
        EXPECT_EQ(header_text(publish.message, header::kDue), format_rfc3339_ms(due));
    }
    // The fake counts a record inside the store call; the loader counts it just after.
    EXPECT_TRUE(eventually([&] { return loader->runs_handed_over() == 2u; }));
}

// The runs of one batch leave together (fewer, fuller TCP segments for the broker to read), and
// are let go before the loader waits for their confirms: none stays unsent meanwhile.
TEST_F(LoaderTest, publishes_a_batch_with_its_sends_held_and_lets_them_go_before_waiting) {
    // One due time for all: due times a millisecond apart may leave as batches of one.
    const auto due = in(300ms);
    for (int i = 0; i < 20; ++i) db.add("job-" + std::to_string(100 + i), due);
    start(options());
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 20; }));
    const auto publishes = broker.publishes();
    ASSERT_EQ(publishes.size(), 20u);
    for (const auto& publish : publishes)
        EXPECT_TRUE(publish.held) << header_text(publish.message, header::kId);
    std::lock_guard lock(broker.mutex);
    EXPECT_EQ(broker.waits_while_held, 0);
    EXPECT_FALSE(broker.sends_held);
}

// With --no-audit nothing observes a release: the runs go out marked unaudited, so that an
// instance with the audit never takes them for runs the broker lost (JobStore::claim_due).
TEST_F(LoaderTest, records_whether_the_audit_observes_the_runs_it_hands_over) {
    db.add("observed", in(300ms));
    start(options());
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    stop();
    db.add("unobserved", in(300ms));
    auto without_audit = options();
    without_audit.releases_observed = false;
    start(std::move(without_audit));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 2; }));
    db.read([](const FakeDatabase& d) {
        EXPECT_TRUE(d.rows.at("observed").audited);
        EXPECT_FALSE(d.rows.at("unobserved").audited);
    });
}

// A run that handed-over runs are observed with (their group's last run, given back when its
// connection dropped before it left, or re-sent) is published with its own audit copy, never
// observed with another: else those runs never ended `done` and were published again after
// --resend-after.
TEST_F(LoaderTest, a_run_others_are_observed_with_always_takes_its_own_audit_copy) {
    const auto due = in(1500ms);
    for (int i = 0; i < 12; ++i) {
        ClaimedRun run;
        run.id = "grouped-" + std::to_string(100 + i);
        run.routing_key = "rk." + run.id;
        run.due_at = due;
        run.observe_itself = i % 3 == 0;
        db.add(std::move(run));
    }
    auto loader_options = options();
    loader_options.topology.delay_lanes = 1;  // one queue: one group, unless a run observes itself
    start(std::move(loader_options));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 12; }));
    const auto publishes = broker.publishes();
    ASSERT_EQ(publishes.size(), 12u);
    for (const auto& publish : publishes) {
        const auto id = header_text(publish.message, header::kId);
        const bool observe_itself =
            db.read([&](const FakeDatabase& d) { return d.rows.at(id).run.observe_itself; });
        if (!observe_itself) continue;
        EXPECT_EQ(bcc_keys(publish.message), std::vector<std::string>{names.audit_key}) << id;
        EXPECT_FALSE(db.read([&](const FakeDatabase& d) { return d.rows.at(id).observed_with; }))
            << id;
    }
}

// Release groups: runs due at one instant and published into one delay queue leave it in
// publish order, so the audit needs a copy of the last one only. That one carries the BCC key
// that copies its release to the audit queue; the others carry none and are recorded as
// observed with it.
TEST_F(LoaderTest, observes_a_hotspot_through_the_last_run_published_to_each_queue) {
    const auto due = in(1500ms);
    for (int i = 0; i < 40; ++i) db.add("hot-" + std::to_string(i), due);
    auto loader_options = options();
    loader_options.topology.delay_lanes = 4;
    start(std::move(loader_options));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 40; }));

    const auto publishes = broker.publishes();
    ASSERT_EQ(publishes.size(), 40u);
    std::map<std::string, std::size_t> last_published;  // id -> index in publishes
    for (std::size_t i = 0; i < publishes.size(); ++i) {
        last_published[header_text(publishes[i].message, header::kId)] = i;
    }
    std::set<std::string> observed_alone;
    db.read([&](const FakeDatabase& d) {
        for (const auto& [id, row] : d.rows) {
            EXPECT_TRUE(row.audited) << id;
            const auto& publish = publishes[last_published.at(id)];
            if (!row.observed_with) {
                EXPECT_EQ(bcc_keys(publish.message), std::vector<std::string>{names.audit_key})
                    << id << ": observed itself, so its release must be copied to the audit";
                observed_alone.insert(id);
                continue;
            }
            EXPECT_TRUE(bcc_keys(publish.message).empty()) << id << ": needs no copy";
            // Observed with a run published after it into the same queue, due at the same time,
            // which is observed itself.
            const auto& with = *row.observed_with;
            ASSERT_TRUE(last_published.contains(with.id)) << id;
            const auto& witness = publishes[last_published.at(with.id)];
            EXPECT_GT(last_published.at(with.id), last_published.at(id)) << id;
            EXPECT_EQ(witness.message.exchange, publish.message.exchange) << id;
            EXPECT_EQ(d.rows.at(with.id).run.due_at, row.run.due_at) << id;
            EXPECT_FALSE(d.rows.at(with.id).observed_with.has_value()) << id;
            EXPECT_EQ(with.run, 1);
        }
    });
    // One per lane when the 40 went out in one batch; a slow machine may split the batch.
    EXPECT_GE(observed_alone.size(), 4u);
    EXPECT_LE(observed_alone.size(), 12u);
}

// Only runs due at one instant form groups: runs due at different instants and a run routed
// with the audit key itself (copied whatever it carries) are observed one by one, each through
// its own copy. A targeted run alone is copied by the forwarder: no key,
// no x-hourglass-observed-with.
TEST_F(LoaderTest, observes_runs_alone_unless_they_share_a_queue_and_a_due_time) {
    const auto due = in(1500ms);
    db.add("spread-1", in(1400ms));
    db.add("spread-2", in(1450ms));
    ClaimedRun targeted;
    targeted.id = "targeted";
    targeted.exchange = "elsewhere";
    targeted.due_at = due;
    // As if edited by hand: hourglass's mark from a row would keep the forwarder from copying.
    set_header(targeted.properties, std::string(header::kObservedWith), std::string("forged"));
    db.add(targeted);
    ClaimedRun keyed;
    keyed.id = "routed-with-the-audit-key";
    keyed.routing_key = names.audit_key;
    keyed.due_at = due;
    db.add(keyed);
    db.add("after-the-keyed-one", due);
    auto loader_options = options();
    loader_options.topology.delay_lanes = 1;
    start(std::move(loader_options));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 5; }));

    for (const auto& publish : broker.publishes()) {
        const auto id = header_text(publish.message, header::kId);
        if (id == "targeted") {
            EXPECT_TRUE(bcc_keys(publish.message).empty());
            EXPECT_EQ(find_header(publish.message.properties, header::kObservedWith), nullptr);
        } else {
            EXPECT_EQ(bcc_keys(publish.message), std::vector<std::string>{names.audit_key}) << id;
        }
    }
    db.read([](const FakeDatabase& d) {
        for (const auto& [id, row] : d.rows) {
            EXPECT_FALSE(row.observed_with.has_value()) << id;
            EXPECT_TRUE(row.audited) << id;
        }
    });
}

// Targeted runs due at one instant leave their forward delay queue in publish order too, apart
// from the untargeted runs due with them: the forwarder copies the last of each group to the
// audit, and skips the others, which the loader marks x-hourglass-observed-with (the id of the
// run they are observed with). No targeted run carries the audit key: the forward queue is
// not the release, and a copy made there would be recorded before the forwarder publishes.
TEST_F(LoaderTest,
       observes_a_targeted_hotspot_through_the_last_run_published_to_the_forward_queue) {
    const auto due = in(1500ms);
    for (int i = 0; i < 30; ++i) {
        db.add_targeted("targeted-" + std::to_string(i), due);
        db.add("plain-" + std::to_string(i), due);
    }
    auto loader_options = options();
    loader_options.topology.delay_lanes = 2;
    start(std::move(loader_options));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 60; }));

    const auto publishes = broker.publishes();
    ASSERT_EQ(publishes.size(), 60u);
    std::map<std::string, std::size_t> published_at;  // id -> index in publishes
    for (std::size_t i = 0; i < publishes.size(); ++i) {
        published_at[header_text(publishes[i].message, header::kId)] = i;
    }
    std::size_t targeted_alone = 0;
    db.read([&](const FakeDatabase& d) {
        for (const auto& [id, row] : d.rows) {
            if (row.run.exchange.empty()) continue;
            const auto& message = publishes[published_at.at(id)].message;
            EXPECT_TRUE(bcc_keys(message).empty()) << id;
            EXPECT_TRUE(row.audited) << id;
            const auto* marker = find_header(message.properties, header::kObservedWith);
            if (!row.observed_with) {
                EXPECT_EQ(marker, nullptr) << id << ": observed itself, so the forwarder copies it";
                ++targeted_alone;
                continue;
            }
            const auto& with = *row.observed_with;
            ASSERT_NE(marker, nullptr) << id;
            EXPECT_EQ(std::get<std::string>(marker->value), with.id);
            // The run it is observed with is targeted, published after it into the same forward
            // delay queue, and observed itself.
            ASSERT_TRUE(d.rows.contains(with.id)) << id;
            const auto& witness = d.rows.at(with.id);
            EXPECT_FALSE(witness.run.exchange.empty()) << id << " observed with " << with.id;
            EXPECT_FALSE(witness.observed_with.has_value()) << id;
            EXPECT_GT(published_at.at(with.id), published_at.at(id)) << id;
            EXPECT_EQ(publishes[published_at.at(with.id)].message.exchange, message.exchange);
        }
    });
    // One group when the 60 went out in one batch; a slow machine may split the batch.
    EXPECT_GE(targeted_alone, 1u);
    EXPECT_LE(targeted_alone, 3u);
}

// Without the audit nothing is grouped and no release carries the key, so none is copied to an
// audit queue a prefix declared by an instance with the audit still has bound: nothing would
// consume what reached it.
TEST_F(LoaderTest, groups_nothing_and_copies_nothing_to_the_audit_when_the_audit_is_off) {
    const auto due = in(1500ms);
    for (int i = 0; i < 10; ++i) db.add("hot-" + std::to_string(i), due);
    db.add("alone", in(1800ms));
    auto loader_options = options();
    loader_options.releases_observed = false;
    start(std::move(loader_options));  // sets `names`
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 11; }));
    ASSERT_EQ(broker.publishes().size(), 11u);
    for (const auto& publish : broker.publishes()) {
        EXPECT_TRUE(bcc_keys(publish.message).empty()) << publish.message.exchange;
    }
    db.read([](const FakeDatabase& d) {
        for (const auto& [id, row] : d.rows) {
            EXPECT_FALSE(row.observed_with.has_value()) << id;
            EXPECT_FALSE(row.audited) << id;
        }
    });
}

// Delay lanes: a hotspot is spread evenly over the queues of its rung, so that the broker
// releases it from several queues at once; each run still goes to a queue of the right TTL.
TEST_F(LoaderTest, spreads_the_runs_of_one_rung_evenly_over_its_lanes) {
    const auto due = in(1500ms);
    for (int i = 0; i < 40; ++i) db.add("hot-" + std::to_string(i), due);
    auto loader_options = options();
    loader_options.topology.delay_lanes = 4;
    start(std::move(loader_options));

    ASSERT_TRUE(eventually([&] { return db.handed_over() == 40; }));
    std::map<std::string, int> per_queue;
    for (const auto& publish : broker.publishes()) {
        ++per_queue[publish.message.exchange];
        EXPECT_GE(released_at(publish), due);  // never early, whatever the lane
    }
    // One rung (1 s: published 1 s before due) or, on a slow machine, two; lanes in turn.
    std::map<unsigned, int> per_lane;
    for (const auto& [queue, count] : per_queue) {
        for (unsigned lane = 0; lane < 4; ++lane) {
            for (const auto ttl : ladder->ttls()) {
                if (queue == names.delay(ttl, lane)) per_lane[lane] += count;
            }
        }
    }
    ASSERT_EQ(per_lane.size(), 4u);
    for (const auto& [lane, count] : per_lane) EXPECT_EQ(count, 10) << "lane " << lane;
    EXPECT_EQ(names.delay(1s, 0), "hourglass.delay.ttl-1000ms");  // lane 0: the name without lanes
    EXPECT_EQ(names.delay(1s, 3), "hourglass.delay.ttl-1000ms.3");
}

TEST_F(LoaderTest, refuses_lane_counts_outside_one_to_the_maximum) {
    for (const unsigned count : {0u, delay::kMaxDelayLanes + 1}) {
        auto loader_options = options();
        loader_options.topology.delay_lanes = count;
        EXPECT_THROW(Loader(std::move(loader_options)), std::invalid_argument) << count;
    }
    auto loader_options = options();
    loader_options.topology.delay_lanes = delay::kMaxDelayLanes;
    EXPECT_NO_THROW(Loader(std::move(loader_options)));
}

TEST_F(LoaderTest, one_lane_publishes_every_run_to_the_queue_named_by_its_ttl_alone) {
    for (int i = 0; i < 8; ++i) db.add("run-" + std::to_string(i), in(1500ms));
    auto loader_options = options();
    loader_options.topology.delay_lanes = 1;
    start(std::move(loader_options));

    ASSERT_TRUE(eventually([&] { return db.handed_over() == 8; }));
    for (const auto& publish : broker.publishes()) {
        EXPECT_EQ(publish.message.exchange.rfind('.'), std::string("hourglass.delay").size())
            << publish.message.exchange;
    }
}

TEST_F(LoaderTest, compares_due_times_on_the_injected_clock_not_the_hosts) {
    // The one clock runs an hour ahead of this host's: a run due in an hour by the host's
    // clock is due now.
    offset = std::chrono::hours{1};
    db.add("due-now-on-the-one-clock", in(100ms));
    start(options());
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    EXPECT_GE(released_at(broker.publishes().at(0)), in(0ms) - 1s);
}

TEST_F(LoaderTest, heartbeats_set_the_clock_they_were_given_to_postgresqls) {
    // The service's one clock, shared with ingest and the audit: the loader's heartbeat keeps
    // it on PostgreSQL's clock; a clock of its own would leave theirs behind.
    const auto service_clock = std::make_shared<DatabaseClock>();
    db.read([](FakeDatabase& d) { return d.clock_offset = std::chrono::milliseconds{-1500}; });
    auto loader_options = options();
    loader_options.clock = service_clock;
    start(std::move(loader_options));
    ASSERT_TRUE(eventually([&] { return service_clock->offset() == -1500ms; }));
    const auto host = now_us();
    EXPECT_LE(service_clock->now_us(), host - 1400ms);

    db.read([](FakeDatabase& d) { return d.clock_offset = std::chrono::milliseconds{250}; });
    EXPECT_TRUE(eventually([&] { return service_clock->offset() == 250ms; }));
}

// Runs count as lost (--resend-after) only while the service's health says the loader and the
// audit are connected and the broker releases (loader::ResendRule, tested on its own clock in
// resend_rule_test.cpp): the claimer asks it on every claim.
TEST_F(LoaderTest, counts_runs_as_lost_only_while_its_health_says_the_audit_is_connected) {
    using health::Component, health::Peer;
    auto loader_options = options();
    loader_options.resend_after = 200ms;
    loader_options.metrics = std::make_shared<metrics::ServiceMetrics>();
    const auto service_health = std::make_shared<health::ServiceHealth>(loader_options.metrics);
    loader_options.health = service_health;
    const auto resend_before = [&] {
        return db.read([](const FakeDatabase& d) { return d.last_resend_due_before; });
    };
    start(std::move(loader_options));
    std::list<metrics::ScopedGaugeIncrement> open;
    for (const auto& [component, peer] : {std::pair{Component::loader, Peer::rabbitmq},
                                          std::pair{Component::audit, Peer::rabbitmq}}) {
        open.emplace_back(service_health->open_connections(component, peer));
    }
    service_health->set_probe_returned(in(0ms));  // the broker releases
    std::this_thread::sleep_for(400ms);  // claims every 20 ms: the audit has no database
    EXPECT_EQ(resend_before(), std::nullopt);

    open.emplace_back(service_health->open_connections(Component::audit, Peer::postgresql));
    ASSERT_TRUE(eventually([&] { return resend_before().has_value(); }));
    const auto cut = *resend_before();
    EXPECT_LE(cut, in(-200ms) + 50ms) << "runs handed over within resend_after are not lost yet";

    // An audit a minute behind the releases: a run is lost only once its copy had that long too.
    service_health->set_audit_behind(60s);
    ASSERT_TRUE(eventually([&] { return resend_before() && *resend_before() < in(-60s); }));
    EXPECT_GE(*resend_before(), in(-60s - 200ms - 100ms));
    service_health->set_audit_behind(0s);

    open.pop_front();  // the loader's broker connection drops
    EXPECT_TRUE(eventually([&] { return !resend_before().has_value(); }));
}

// A run taken for publishing at its instant, then published by a clock stepped back 1 ms,
// must keep the TTL of its rung: rounding up to the next one released it a step late.
TEST_F(LoaderTest, a_clock_stepping_back_a_little_never_sends_a_run_to_the_next_rung) {
    clock_steps_back = true;
    for (int i = 0; i < 100; ++i) {
        db.add("run-" + std::to_string(i), in(300ms + i * 10ms));
    }
    start(options());  // a 2 s horizon: 1 s between rungs

    ASSERT_TRUE(eventually([&] { return db.handed_over() == 100; }, 5s));
    int a_step_late = 0;
    for (const auto& publish : broker.publishes()) {
        const auto id = header_text(publish.message, header::kId);
        const auto due = db.read([&](const FakeDatabase& d) { return d.rows.at(id).run.due_at; });
        EXPECT_GE(released_at(publish), due - 1ms) << id;  // the stepped-back clock stamps it
        if (released_at(publish) > due + 500ms) ++a_step_late;
    }
    EXPECT_EQ(a_step_late, 0) << "of 100 runs";
}

}  // namespace
}  // namespace hourglass::loader::loader_tests
