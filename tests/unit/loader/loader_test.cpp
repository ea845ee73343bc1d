// The loader with a fake store and a fake broker channel (its seams, loader.hpp): hand-over,
// live leases (renewal, silence, takeover), give-back of refused and failed publishes, and the
// clean stop, in milliseconds and without services. The integration tests keep it real.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "loader/loader.hpp"
#include "support/fake_claim_store.hpp"
#include "support/fake_release_channel.hpp"
#include "support/prometheus_text.hpp"

namespace hourglass::loader {
namespace {

namespace prometheus = hourglass::testing::prometheus;
using namespace std::chrono_literals;
using Micros = std::chrono::sys_time<std::chrono::microseconds>;

// Waits until `condition` holds (true) or `timeout` passes (false).
template <typename Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout = 3s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (condition()) return true;
        std::this_thread::sleep_for(5ms);
    }
    return condition();
}

using testing::FakeDatabase;
using testing::FakeStore;
using testing::FakeBroker;
using testing::FakeChannel;

// A loader over the fakes, running in its own thread until the fixture ends or stop().
class LoaderTest : public ::testing::Test {
protected:
    LoaderOptions options() {
        LoaderOptions options;
        options.horizon = 2s;
        options.poll_interval = 20ms;
        options.owner = "instance-a";
        options.lease_timings = {.heartbeat_every = 20ms,
                                 .publish_grace = 150ms,
                                 .takeover_after = 300ms,
                                 .orphan_age = 300ms,
                                 .reconcile_every = 50ms};
        return options;
    }
    void start(LoaderOptions loader_options, NextRunFunction next_run = {}) {
        LoaderSeams seams;
        seams.open_store = [this](const store::StoreOptions&) { return std::make_unique<FakeStore>(db); };
        seams.open_channel = [this] {
            {
                std::lock_guard lock(broker.mutex);
                ++broker.channels_opened;
            }
            return std::make_unique<FakeChannel>(broker, [this] { return clock(); });
        };
        seams.now = [this] { return clock(); };
        seams.declare_forward_ladder = [this] {
            std::unique_lock lock(broker.mutex);
            ++broker.forward_ladder_declarations;
            broker.forward_ladder_unstalled.wait(lock,
                                                 [&] { return !broker.forward_ladder_stalls; });
            if (broker.forward_ladder_failures > 0) {
                --broker.forward_ladder_failures;
                throw std::runtime_error("fake broker: connection refused");
            }
            broker.forward_ladder_exists = true;
        };
        // Real-time scheduling is asked for, never granted to a unit test's thread.
        seams.make_publisher_realtime = [this] {
            std::ifstream comm("/proc/thread-self/comm");
            std::string thread_name;
            std::getline(comm, thread_name);
            std::lock_guard lock(realtime_mutex);
            realtime_asked_by.push_back(thread_name);
            return realtime_answer;
        };
        metrics = loader_options.metrics;
        ladder.emplace(delay::DelayLadder::for_horizon(loader_options.horizon));
        names = loader_options.topology.names;
        lanes = loader_options.topology.delay_lanes;
        loader.emplace(std::move(loader_options), std::move(next_run), std::move(seams));
        thread = std::jthread([this](std::stop_token stop) { loader->run(stop); });
    }
    void stop() {
        thread.request_stop();
        if (thread.joinable()) thread.join();
    }
    void TearDown() override {
        db.open_claims();
        broker.unstall_forward_ladder();
        stop();
    }

    // The one clock, which the test may set ahead of the host's, or make step back 1 ms at
    // every other reading, as a heartbeat re-measuring PostgreSQL's clock may at any moment.
    Micros clock() const {
        const auto now = now_us() + offset.load();
        if (clock_steps_back && ++clock_readings % 2 == 0) return now - 1ms;
        return now;
    }
    TimePoint in(Milliseconds delay) const {
        return std::chrono::time_point_cast<Milliseconds>(clock()) + delay;
    }
    // When RabbitMQ would release a publish: its time plus the TTL of the queue it went to.
    Micros released_at(const FakeBroker::Published& publish) const {
        for (const auto ttl : ladder->ttls()) {
            for (unsigned lane = 0; lane < lanes; ++lane) {
                if (publish.message.exchange == names.delay(ttl, lane)) return publish.at + ttl;
            }
        }
        ADD_FAILURE() << "published to " << publish.message.exchange << ", not a delay queue";
        return publish.at;
    }

    // 30 runs due in 1.5 s, each shaped by `shape` to take about 4 KB; the loader may hold
    // 20,000 bytes: never more than 6 at once (5 fill the bound, a claim may take one more).
    void expect_held_within_the_byte_bound(const std::function<void(ClaimedRun&)>& shape,
                                               LoaderOptions limited) {
        for (int i = 0; i < 30; ++i) {
            ClaimedRun run;
            run.id = "job-" + std::to_string(100 + i);
            run.routing_key = "rk";
            run.due_at = in(1500ms);
            shape(run);
            db.add(std::move(run));
        }
        limited.max_in_memory_bytes = 20000;
        start(std::move(limited));
        ASSERT_TRUE(eventually([&] { return loader->in_memory_runs() >= 5; }));
        std::this_thread::sleep_for(200ms);
        EXPECT_LE(loader->in_memory_runs(), 6u);
        EXPECT_TRUE(eventually([&] { return db.handed_over() == 30; }));
    }

    // The loader's series, rendered and parsed.
    double metric(const std::string& name) const {
        return prometheus::parse(metrics->registry().render_prometheus()).value(name);
    }
    std::vector<std::string> realtime_requests() {
        std::lock_guard lock(realtime_mutex);
        return realtime_asked_by;
    }

    FakeDatabase db;
    FakeBroker broker;
    std::shared_ptr<metrics::ServiceMetrics> metrics;
    std::mutex realtime_mutex;
    int realtime_answer = EPERM;                  // what make_publisher_realtime returns
    std::vector<std::string> realtime_asked_by;  // the names of the threads that asked
    std::atomic<std::chrono::microseconds> offset{std::chrono::microseconds{0}};
    std::atomic<bool> clock_steps_back{false};
    mutable std::atomic<std::uint64_t> clock_readings{0};
    std::optional<delay::DelayLadder> ladder;
    delay::TopologyNames names;
    unsigned lanes = 1;
    std::optional<Loader> loader;
    std::jthread thread;
};

std::string header_text(const Message& message, std::string_view name) {
    const auto* value = find_header(message.properties, name);
    if (value == nullptr) return {};
    const auto* text = std::get_if<std::string>(&value->value);
    return text != nullptr ? *text : std::string{};
}

// The routing keys a publish asks RabbitMQ to add in BCC (none without the header).
std::vector<std::string> bcc_keys(const Message& message) {
    std::vector<std::string> keys;
    if (const auto* bcc = find_header(message.properties, "BCC")) {
        for (const auto& key : std::get<FieldArray>(bcc->value)) {
            keys.push_back(std::get<std::string>(key.value));
        }
    }
    return keys;
}

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

// Each confirm wakes the claimer to record hand-overs; it must not claim again each time
// (at 1,000 jobs/s that was a claim query every few milliseconds).
TEST_F(LoaderTest, claims_once_per_poll_interval_however_many_confirms_arrive) {
    for (int i = 0; i < 40; ++i) db.add("job-" + std::to_string(100 + i), in(200ms + i * 20ms));
    auto slow_poll = options();
    slow_poll.poll_interval = 5s;
    start(std::move(slow_poll));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 40; }));
    EXPECT_EQ(db.read([](const FakeDatabase& d) { return d.claims; }), 1);
}

// --realtime-publisher auto: the publisher thread (the one whose timing makes releases late or
// not) asks once for real-time scheduling, and the gauge says whether it got it.
TEST_F(LoaderTest, the_publisher_thread_asks_for_realtime_scheduling_and_reports_the_answer) {
    realtime_answer = 0;
    db.add("on-time", in(300ms));
    auto realtime = options();
    realtime.realtime_publisher = RealtimeMode::automatic;
    start(std::move(realtime));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    EXPECT_EQ(realtime_requests(), std::vector<std::string>{"hg-loader-pub"});
    EXPECT_EQ(metric("hourglass_publisher_realtime"), 1);
}

// Refused (no CAP_SYS_NICE, no RLIMIT_RTPRIO): the loader goes on with normal scheduling.
TEST_F(LoaderTest, a_refused_realtime_request_changes_nothing_but_the_gauge) {
    realtime_answer = EPERM;
    db.add("on-time", in(300ms));
    auto realtime = options();
    realtime.realtime_publisher = RealtimeMode::automatic;
    start(std::move(realtime));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    EXPECT_EQ(realtime_requests().size(), 1u);
    EXPECT_EQ(metric("hourglass_publisher_realtime"), 0);
}

TEST_F(LoaderTest, with_realtime_off_the_publisher_never_asks) {
    realtime_answer = 0;
    db.add("on-time", in(300ms));
    auto normal = options();
    normal.realtime_publisher = RealtimeMode::off;
    start(std::move(normal));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    EXPECT_TRUE(realtime_requests().empty());
    EXPECT_EQ(metric("hourglass_publisher_realtime"), 0);
}

// A slow broker: the confirm window is full while more runs are due. The publisher must wait
// for a confirm, not poll in a loop (as a real-time thread that would keep a CPU from the
// broker whose confirms it waits for).
TEST_F(LoaderTest, waits_for_a_confirm_without_polling_in_a_loop_while_the_window_is_full) {
    for (int i = 0; i < 6; ++i) db.add("job-" + std::to_string(i), in(200ms));
    {
        std::lock_guard lock(broker.mutex);
        broker.hold_confirms = true;
    }
    auto small_window = options();
    small_window.max_unconfirmed = 2;
    start(std::move(small_window));
    ASSERT_TRUE(eventually([&] { return broker.publishes().size() == 2; }));
    const auto polls_before = [&] {
        std::lock_guard lock(broker.mutex);
        return broker.empty_polls_without_wait;
    }();
    std::this_thread::sleep_for(300ms);  // every run is due, the window stays full
    {
        std::lock_guard lock(broker.mutex);
        EXPECT_LE(broker.empty_polls_without_wait - polls_before, 20);
        EXPECT_EQ(broker.published.size(), 2u);
        broker.hold_confirms = false;
    }
    EXPECT_TRUE(eventually([&] { return db.handed_over() == 6; }));
}

// The recorder has a connection of its own: a claim that takes long (a hotspot's next batch)
// does not hold up the record of runs already confirmed.
TEST_F(LoaderTest, records_confirmed_runs_while_a_claim_is_still_running) {
    for (int i = 0; i < 20; ++i) db.add("run-" + std::to_string(i), in(300ms));
    db.claims_allowed = 1;  // the first claim takes the 20 runs; the next one hangs
    start(options());

    ASSERT_TRUE(eventually([&] { return broker.publishes().size() == 20u; }));
    EXPECT_TRUE(eventually([&] { return db.handed_over() == 20u; })) << "recorded while a claim hangs";
    EXPECT_EQ(db.read([](const FakeDatabase& d) { return d.claims; }), 1);
    EXPECT_TRUE(eventually([&] { return loader->runs_handed_over() == 20u; }));
}

// Runs confirmed one by one, a millisecond apart, are recorded together (kRecordEvery).
TEST_F(LoaderTest, records_runs_confirmed_close_together_in_one_update) {
    for (int i = 0; i < 40; ++i) db.add("job-" + std::to_string(100 + i), in(300ms + i * 1ms));
    start(options());
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 40; }));
    EXPECT_LE(db.read([](const FakeDatabase& d) { return d.records; }), 2);
}

TEST_F(LoaderTest, a_wake_for_a_run_due_before_the_next_claim_claims_it_at_once) {
    auto slow_poll = options();
    slow_poll.horizon = 20s;
    slow_poll.poll_interval = 1s;
    start(std::move(slow_poll));
    ASSERT_TRUE(eventually([&] { return db.read([](const FakeDatabase& d) { return d.claims; }) == 1; }));

    // Due after the next regular claim (1 s) plus the margin (1 s): no claim until that one.
    db.add("in-ten-seconds", in(10s));
    loader->wake_for(in(10s));
    std::this_thread::sleep_for(300ms);
    EXPECT_FALSE(db.claimed("in-ten-seconds"));
    EXPECT_TRUE(eventually([&] { return db.claimed("in-ten-seconds"); }, 3s));

    // Due sooner: claimed at once, well before the next regular claim.
    db.add("in-half-a-second", in(500ms));
    const auto woken = std::chrono::steady_clock::now();
    loader->wake_for(in(500ms));
    const auto handed_over = [&](const std::string& id) {
        return db.read([&](const FakeDatabase& d) { return d.rows.at(id).handed_over; });
    };
    ASSERT_TRUE(eventually([&] { return db.claimed("in-half-a-second") || handed_over("in-half-a-second"); }));
    EXPECT_LT(std::chrono::steady_clock::now() - woken, 400ms);
    EXPECT_TRUE(eventually([&] { return handed_over("in-half-a-second"); }));
}

TEST_F(LoaderTest, holds_no_more_runs_in_memory_than_allowed) {
    for (int i = 0; i < 50; ++i) db.add("job-" + std::to_string(100 + i), in(1500ms));
    auto limited = options();
    limited.max_in_memory_runs = 20;
    start(std::move(limited));
    ASSERT_TRUE(eventually([&] { return loader->in_memory_runs() == 20; }));
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(loader->in_memory_runs(), 20u);
    EXPECT_EQ(metric("hourglass_runs_held"), 20);
    EXPECT_TRUE(eventually([&] { return db.handed_over() == 50; }));
    EXPECT_TRUE(eventually([&] { return metric("hourglass_runs_held") == 0; }));
}

// A job may carry a frame's worth of headers and a tiny body: the memory bound counts its
// properties too, or 20,000 such runs would be held (2.5 GB at 128 KB each).
TEST_F(LoaderTest, counts_the_headers_of_the_runs_it_holds_against_its_memory_bound) {
    auto small_claims = options();
    small_claims.claim_batch = 2;  // so that only the count of bytes held stops the claims
    expect_held_within_the_byte_bound([](ClaimedRun& run) {
        run.body = "b";
        set_header(run.properties, "big", std::string(4000, 'h'));
    }, std::move(small_claims));
}

// Bodies of 4 KB: a claim takes no more than the bytes left of the memory bound (plus one
// run), not a whole batch of 1,000 runs (1 GB with bodies of the default --max-body).
TEST_F(LoaderTest, claims_no_more_bytes_than_its_memory_bound_has_left) {
    expect_held_within_the_byte_bound([](ClaimedRun& run) { run.body = std::string(4000, 'b'); },
                                      options());
}


// Burst release: the runs of one instant shared by many runs of a claim are held until their
// due time and published straight to the release exchange (paced by the broker's credit flow,
// where a flood dead-lettered by the delay queues has none), still in release groups, recurring
// runs with the others. Runs of other instants take the delay queues as before; a targeted run
// of the instant goes to the forward queue (below).
TEST_F(LoaderTest, publishes_the_runs_of_a_burst_at_their_due_time_to_the_release_exchange) {
    const auto due = in(1500ms);
    for (int i = 0; i < 30; ++i) db.add("hot-" + std::to_string(100 + i), due);
    db.add("alone", in(1400ms));
    ClaimedRun recurring;
    recurring.id = "recurring";
    recurring.routing_key = "rk.recurring";
    recurring.due_at = due;
    recurring.cron = CronSpec{};
    db.add(recurring);
    db.add_targeted("targeted", due);
    auto loader_options = options();
    loader_options.topology.delay_lanes = 4;
    loader_options.burst_min_runs = 10;
    start(std::move(loader_options));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 33; }));

    const auto publishes = broker.publishes();
    ASSERT_EQ(publishes.size(), 33u);
    std::size_t copied = 0;
    for (std::size_t i = 0; i < publishes.size(); ++i) {
        const auto& publish = publishes[i];
        const auto id = header_text(publish.message, header::kId);
        if (id == "targeted") {
            EXPECT_EQ(publish.message.exchange, names.forward);
            EXPECT_GE(publish.at, due) << "published before its due time";
        }
        if (!id.starts_with("hot-") && id != "recurring") {
            if (id == "alone") {
                EXPECT_NE(publish.message.exchange, names.release) << id;
            }
            continue;
        }
        EXPECT_EQ(publish.message.exchange, names.release) << id;
        EXPECT_EQ(publish.message.routing_key, "rk." + id);
        EXPECT_GE(publish.at, due) << id << ": published before its due time";
        EXPECT_LE(publish.at, due + 500ms) << id;  // loose: CI machines are busy
        const bool observed_itself = !bcc_keys(publish.message).empty();
        copied += observed_itself;
        // Observed with a burst run published after it on this one channel.
        const auto with = db.read([&](const FakeDatabase& d) { return d.rows.at(id).observed_with; });
        EXPECT_EQ(with.has_value(), !observed_itself) << id;
        if (with) {
            const auto later = std::find_if(publishes.begin() + static_cast<long>(i) + 1, publishes.end(),
                                            [&](const auto& p) { return header_text(p.message, header::kId) == with->id; });
            ASSERT_NE(later, publishes.end()) << id;
            EXPECT_EQ(later->message.exchange, names.release) << id;
        }
    }
    // One copy per publish batch of the burst, not one per lane or per run.
    EXPECT_GE(copied, 1u);
    EXPECT_LE(copied, 3u);
    EXPECT_EQ(metric("hourglass_burst_runs_total"), 32);  // the targeted and recurring runs too
}

// A nack is not a loss (issue: a full consumer queue multiplied a burst): a burst run goes
// straight to the release exchange, whose nack says only that one bound queue refused its copy
// (x-overflow reject-publish at its limit) while the others took theirs. Given back, it was
// claimed and published again round after round; counted as released, it is published once.
TEST_F(LoaderTest, a_nacked_burst_run_counts_as_released_and_is_never_published_again) {
    const auto due = in(800ms);
    for (int i = 0; i < 12; ++i) db.add("nacked-" + std::to_string(100 + i), due);
    auto loader_options = options();
    loader_options.burst_min_runs = 10;
    broker.answer_next({FakeBroker::Answer::nack, FakeBroker::Answer::nack});
    start(std::move(loader_options));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 12; }, 5s));
    std::this_thread::sleep_for(500ms);  // a give-back would be claimed and published again by now
    const auto publishes = broker.publishes();
    EXPECT_EQ(publishes.size(), 12u);
    for (const auto& publish : publishes) EXPECT_EQ(publish.message.exchange, names.release);
    EXPECT_EQ(metric("hourglass_release_nacks_total"), 2);
    EXPECT_EQ(metric("hourglass_delay_nacks_total"), 0);
}

// Expiry (x-hourglass-expires-after): a run handed over later than that after its due time
// goes to <prefix>.expired with the reason, is recorded as ended (never observed, never re-sent);
// one still within its bound is released as usual.
TEST_F(LoaderTest, a_run_handed_over_later_than_its_expiry_goes_to_the_expired_exchange) {
    ClaimedRun too_late;
    too_late.id = "too-late";
    too_late.routing_key = "rk.too-late";
    too_late.due_at = in(-5s);
    too_late.expires_after = Milliseconds{2000};
    db.add(too_late);
    ClaimedRun in_time = too_late;
    in_time.id = "in-time";
    in_time.expires_after = Milliseconds{60000};
    db.add(in_time);
    start(options());
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 2; }));
    for (const auto& publish : broker.publishes()) {
        const auto id = header_text(publish.message, header::kId);
        if (id == "too-late") {
            EXPECT_EQ(publish.message.exchange, names.expired);
            EXPECT_NE(header_text(publish.message, header::kError).find("x-hourglass-expires-after (2000 ms)"),
                      std::string::npos);
            EXPECT_TRUE(bcc_keys(publish.message).empty()) << "nothing observes an expired run";
        } else {
            EXPECT_NE(publish.message.exchange, names.expired) << id;
        }
    }
    EXPECT_FALSE(db.read([](const FakeDatabase& d) { return d.rows.at("too-late").audited; }));
    EXPECT_TRUE(db.read([](const FakeDatabase& d) { return d.rows.at("in-time").audited; }));
    EXPECT_EQ(metric("hourglass_runs_expired_total"), 1);
}

// A popular cron minute: the runs of recurring jobs due at one instant are a burst like any
// other. Each is held until the instant, published to the release exchange in release groups
// (one audit copy per group, as for one-shot runs), and its row moves on to the next run once
// the publish is confirmed. That next run is computed when the run is claimed, not at each confirm
// of the burst, which would hold up the publisher at the instant.
TEST_F(LoaderTest, publishes_a_burst_of_recurring_runs_at_their_due_time_and_moves_each_on_after_it) {
    const auto due = in(1500ms);
    for (int i = 0; i < 30; ++i) {
        ClaimedRun run;
        run.id = "cron-" + std::to_string(100 + i);
        run.routing_key = "rk." + run.id;
        run.due_at = due;
        run.run = 7;
        run.cron = CronSpec{};
        db.add(std::move(run));
    }
    auto loader_options = options();
    loader_options.burst_min_runs = 10;
    std::mutex asked_mutex;
    std::vector<TimePoint> asked_at;  // the clock when each next run was computed
    start(std::move(loader_options), [&](const ClaimedRun& run, TimePoint now) -> AfterHandover {
        std::lock_guard lock(asked_mutex);
        asked_at.push_back(now);
        return {.next_due = run.due_at + 60s};
    });
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 30; }));

    const auto publishes = broker.publishes();
    ASSERT_EQ(publishes.size(), 30u);
    for (const auto& publish : publishes) {
        const auto id = header_text(publish.message, header::kId);
        EXPECT_EQ(publish.message.exchange, names.release) << id << " was not taken for a burst";
        EXPECT_GE(publish.at, due) << id << ": published before its due time";
        EXPECT_LE(publish.at, due + 500ms) << id;  // loose: CI machines are busy
        const auto* run = find_header(publish.message.properties, header::kRun);
        ASSERT_NE(run, nullptr) << id;
        EXPECT_EQ(std::get<std::int64_t>(run->value), 7) << id;
        db.read([&](const FakeDatabase& d) {
            const auto& row = d.rows.at(id);
            EXPECT_EQ(row.next_due, due + 60s) << id;
            EXPECT_EQ(row.observed_with.has_value(), bcc_keys(publish.message).empty()) << id;
            if (row.observed_with) {
                EXPECT_EQ(row.observed_with->run, 7) << id;
            }
        });
    }
    const auto copied = std::count_if(publishes.begin(), publishes.end(),
                                      [](const auto& p) { return !bcc_keys(p.message).empty(); });
    EXPECT_GE(copied, 1);
    EXPECT_LE(copied, 3) << "one audit copy per publish batch, not per run";
    std::lock_guard lock(asked_mutex);
    ASSERT_EQ(asked_at.size(), 30u);
    for (const auto& at : asked_at) EXPECT_LT(at, due) << "next run computed on the publish path";
    EXPECT_EQ(metric("hourglass_burst_runs_total"), 30);
}

// The burst bounds hold what they allow; the rest of the burst stays in the store, unclaimed,
// until its instant is a ladder step (1 s) away (claims stop short of it meanwhile), then it is
// claimed and goes out at the instant. Every run is published once, none early, and each run
// left in the store is given back once, not claimed and given back at every poll.
TEST_F(LoaderTest, holds_no_more_burst_runs_than_allowed_and_claims_the_rest_a_step_before_their_instant) {
    const auto due = in(2500ms);
    for (int i = 0; i < 30; ++i) db.add("hot-" + std::to_string(100 + i), due);
    db.add("before", in(1000ms));
    auto loader_options = options();
    loader_options.horizon = 3s;
    loader_options.burst_min_runs = 10;
    loader_options.max_burst_runs = 10;
    start(std::move(loader_options));
    const auto given_back = [&] { return db.read([](const FakeDatabase& d) { return d.released.size(); }); };
    ASSERT_TRUE(eventually([&] { return given_back() >= 20; }));
    db.add("zz-after", in(2700ms));  // within the horizon, but due after the burst
    std::this_thread::sleep_for(300ms);
    EXPECT_LT(clock(), due - 1s);
    EXPECT_LE(loader->in_memory_runs(), 11u);  // 10 of the burst, and "before"
    EXPECT_FALSE(db.claimed("zz-after")) << "claimed past a burst instant whose runs wait";
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 32; }));

    const auto publishes = broker.publishes();
    ASSERT_EQ(publishes.size(), 32u);
    std::set<std::string> ids;
    for (const auto& publish : publishes) {
        const auto id = header_text(publish.message, header::kId);
        EXPECT_TRUE(ids.insert(id).second) << id << " published twice";
        if (id.starts_with("hot-")) {
            EXPECT_EQ(publish.message.exchange, names.release) << id;
            EXPECT_GE(publish.at, due) << id;
            EXPECT_LE(publish.at, due + 500ms) << id;
        } else {
            const auto run_due = db.read([&](const FakeDatabase& d) { return d.rows.at(id).run.due_at; });
            EXPECT_GE(released_at(publish), run_due) << id;
        }
    }
    db.read([](const FakeDatabase& d) { EXPECT_EQ(d.released.size(), 20u); });
    EXPECT_EQ(metric("hourglass_burst_runs_total"), 30);
}

// A burst of targeted runs (the delayed-message plugin's path: x-hourglass-exchange) skips the
// forward ladder the same way: each run is published at its due time into the forward queue,
// which its forward delay queue dead-letters into, with its target for the forwarder, and in
// release groups: all but the last run of a group tell the forwarder to take no audit copy.
// No untargeted run of the instant shares a group with them (they go elsewhere).
TEST_F(LoaderTest, publishes_a_burst_of_targeted_runs_at_their_due_time_to_the_forward_queue) {
    const auto due = in(1500ms);
    for (int i = 0; i < 30; ++i) db.add_targeted("hot-" + std::to_string(100 + i), due);
    for (int i = 0; i < 5; ++i) db.add("plain-" + std::to_string(i), due);
    auto loader_options = options();
    loader_options.burst_min_runs = 10;
    start(std::move(loader_options));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 35; }));

    const auto publishes = broker.publishes();
    ASSERT_EQ(publishes.size(), 35u);
    std::size_t last_of_group = 0;
    for (std::size_t i = 0; i < publishes.size(); ++i) {
        const auto& message = publishes[i].message;
        const auto id = header_text(message, header::kId);
        EXPECT_GE(publishes[i].at, due) << id << ": published before its due time";
        EXPECT_LE(publishes[i].at, due + 500ms) << id;  // loose: CI machines are busy
        if (id.starts_with("plain-")) {
            EXPECT_EQ(message.exchange, names.release) << id;
            EXPECT_TRUE(find_header(message.properties, header::kObservedWith) == nullptr) << id;
            continue;
        }
        EXPECT_EQ(message.exchange, names.forward) << id;
        EXPECT_EQ(header_text(message, header::kExchange), "user.exchange") << id;
        EXPECT_TRUE(bcc_keys(message).empty()) << id << ": the forwarder copies targeted runs";
        const auto with = db.read([&](const FakeDatabase& d) { return d.rows.at(id).observed_with; });
        const auto* mark = find_header(message.properties, header::kObservedWith);
        ASSERT_EQ(mark != nullptr, with.has_value()) << id;
        if (!with) {
            ++last_of_group;
            continue;
        }
        EXPECT_EQ(std::get<std::string>(mark->value), with->id) << id;
        const auto later = std::find_if(publishes.begin() + static_cast<long>(i) + 1, publishes.end(),
                                        [&](const auto& p) { return header_text(p.message, header::kId) == with->id; });
        ASSERT_NE(later, publishes.end()) << id << " observed with a run published before it";
        EXPECT_EQ(later->message.exchange, names.forward) << id;
    }
    // One audit copy per publish batch of the burst, not one per run.
    EXPECT_GE(last_of_group, 1u);
    EXPECT_LE(last_of_group, 3u);
    EXPECT_EQ(metric("hourglass_burst_runs_total"), 35);
}

// A hotspot scheduled within the horizon comes into it over several claims, none of which holds
// enough of its runs to be a burst alone: the runs claimed so far count, so once they reach the
// bound the instant is a burst, and the runs claimed from then on go out as one. Those claimed
// before took the delay queues.
TEST_F(LoaderTest, counts_a_burst_over_the_claims_that_bring_its_runs_into_the_horizon) {
    const auto due = in(2500ms);
    auto loader_options = options();
    loader_options.horizon = 3s;
    loader_options.burst_min_runs = 10;
    start(std::move(loader_options));
    for (int wave = 0; wave < 3; ++wave) {
        std::vector<std::string> ids;
        for (int i = 0; i < 6; ++i) {
            ids.push_back("wave" + std::to_string(wave) + "-" + std::to_string(i));
            db.add(ids.back(), due);
        }
        ASSERT_TRUE(eventually([&] {
            return std::all_of(ids.begin(), ids.end(), [&](const auto& id) {
                return db.claimed(id) || db.read([&](const FakeDatabase& d) { return d.rows.at(id).handed_over; });
            });
        }));
    }
    ASSERT_LT(clock(), due - 1s) << "the waves took too long to tell bursts from the rest";
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 18; }));

    for (const auto& publish : broker.publishes()) {
        const auto id = header_text(publish.message, header::kId);
        if (id.starts_with("wave0-")) {
            EXPECT_GE(released_at(publish), due) << id;  // fails for a publish not to a delay queue
        } else {
            EXPECT_EQ(publish.message.exchange, names.release) << id << " was not taken for a burst";
            EXPECT_GE(publish.at, due) << id;
        }
    }
    EXPECT_EQ(metric("hourglass_burst_runs_total"), 12);
}

TEST_F(LoaderTest, with_burst_release_off_every_run_of_a_burst_takes_the_delay_queues) {
    const auto due = in(1500ms);
    for (int i = 0; i < 30; ++i) db.add("hot-" + std::to_string(100 + i), due);
    auto loader_options = options();
    loader_options.burst_min_runs = 10;
    loader_options.max_burst_runs = 0;
    start(std::move(loader_options));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 30; }));
    for (const auto& publish : broker.publishes()) {
        EXPECT_GE(released_at(publish), due);  // fails for a publish that is not to a delay queue
    }
    EXPECT_EQ(metric("hourglass_burst_runs_total"), 0);
}

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
}  // namespace hourglass::loader
