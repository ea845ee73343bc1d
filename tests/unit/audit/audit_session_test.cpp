// The audit session with a fake queue and a fake store (AuditSeams): releases are recorded in
// batches, each batch acked only after it is recorded, nothing acked when the database refuses,
// stray messages acked without a record, and copies dead-lettered while the broker went down
// left to the loader's re-send; in a burst, copies held until they stop coming.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "audit/audit_consumer.hpp"
#include "released_copies.hpp"
#include "support/fake_deliveries.hpp"

namespace hourglass::audit {
namespace {

using namespace std::chrono_literals;
using testing::death;
using testing::released_copy;
using Micros = std::chrono::sys_time<std::chrono::microseconds>;

// 2026-11-25T12:00:00Z, the fake clock's start.
constexpr std::int64_t kNoonSeconds = 1795608000;
const Micros kNoon{std::chrono::seconds{kNoonSeconds}};

struct LoseConnection {
    // The broker's connection.close text; empty: the connection was lost without one.
    std::string broker_reply;
};

// The audit queue and the database as the fakes share them; `log` is what happened, in order.
struct FakeWorld {
    std::mutex mutex;
    std::deque<std::variant<Message, LoseConnection>> queue;
    std::vector<std::string> log;  // "record a,b", "ack 3"
    std::vector<std::string> recorded_ids;
    bool database_reachable = true;
    std::set<std::string> locked;  // rows another transaction holds: records park them
    std::vector<ObservedRelease> parked;
    int parked_tries = 0;           // records of parked releases while some were parked
    int parked_checks = 0;          // records of parked releases while none were
    std::size_t parked_batch = 1000;  // parked releases one record takes at most
    std::size_t runs_per_copy = 1;  // runs each copy's release group records
    int feeds_opened = 0;
    // Whether the broker releases probes: while not (an alarm), they wait in `blocked_probes`.
    // Off unless a test turns it on, so that no probe comes between the others' copies.
    bool releasing = false;
    std::vector<Message> blocked_probes;
    int probes_sent = 0;
    std::atomic<std::int64_t> now_us{kNoon.time_since_epoch().count()};

    void deliver(Message message) {
        std::lock_guard lock(mutex);
        queue.emplace_back(std::move(message));
    }
    void lose_connection(std::string broker_reply = "") {
        std::lock_guard lock(mutex);
        queue.emplace_back(LoseConnection{std::move(broker_reply)});
    }
    void set_releasing(bool now_releasing) {
        std::lock_guard lock(mutex);
        releasing = now_releasing;
        if (!releasing) return;
        for (auto& probe : blocked_probes) queue.emplace_back(std::move(probe));
        blocked_probes.clear();
    }
    std::vector<std::string> events() {
        std::lock_guard lock(mutex);
        return log;
    }
};

// A consumer's channel: delivery tags count from 1, and what it did not ack goes back to the
// queue, in order, when it closes (as the broker requeues on a lost connection).
class FakeFeed final : public ReleaseFeed {
public:
    explicit FakeFeed(FakeWorld& world) : world_(world), deliveries_(world.queue) {}
    ~FakeFeed() override {
        std::lock_guard lock(world_.mutex);
        deliveries_.requeue();
    }
    std::optional<amqp::Event> next_event(std::chrono::microseconds timeout) override {
        {
            std::lock_guard lock(world_.mutex);
            if (!world_.queue.empty()) {
                auto next = std::move(world_.queue.front());
                world_.queue.pop_front();
                if (const auto* lost = std::get_if<LoseConnection>(&next)) {
                    if (lost->broker_reply.empty()) throw amqp::ConnectionError("connection lost");
                    throw amqp::ConnectionError("connection closed by broker", lost->broker_reply);
                }
                return amqp::Event{deliveries_.deliver(std::get<Message>(std::move(next)))};
            }
        }
        std::this_thread::sleep_for(std::min<std::chrono::microseconds>(timeout, 1ms));
        return std::nullopt;
    }
    void ack(std::uint64_t delivery_tag, bool multiple) override {
        std::lock_guard lock(world_.mutex);
        world_.log.push_back("ack " + std::to_string(delivery_tag) + (multiple ? "" : " single"));
        deliveries_.ack(delivery_tag, multiple);
    }

    void send_probe(TimePoint sent_at) override {
        Message probe;
        set_header(probe.properties, std::string(header::kProbe),
                   static_cast<std::int64_t>(sent_at.time_since_epoch().count()));
        std::lock_guard lock(world_.mutex);
        ++world_.probes_sent;
        if (world_.releasing) {
            world_.queue.emplace_back(std::move(probe));
        } else {
            world_.blocked_probes.push_back(std::move(probe));
        }
    }

private:
    FakeWorld& world_;
    hourglass::testing::FakeDeliveries<decltype(FakeWorld::queue)> deliveries_;
};

class FakeStore final : public store::ReleaseStore {
public:
    explicit FakeStore(FakeWorld& world) : world_(world) {}
    store::RecordedReleases record_releases(const std::vector<ObservedRelease>& releases) override {
        std::lock_guard lock(world_.mutex);
        if (!world_.database_reachable) throw std::runtime_error("database unreachable");
        std::string ids;
        store::RecordedReleases recorded;
        for (std::size_t i = 0; i < releases.size(); ++i) {
            const auto& id = releases[i].id;
            if (world_.locked.contains(id)) {
                recorded.parked.push_back(i);
                world_.parked.push_back(releases[i]);
                ids += (ids.empty() ? "" : ",") + ("(" + id + " parked)");
                continue;
            }
            ids += (ids.empty() ? "" : ",") + id;
            world_.recorded_ids.push_back(id);
        }
        world_.log.push_back("record " + ids);
        recorded.lateness_ms.assign(
            (releases.size() - recorded.parked.size()) * world_.runs_per_copy, 1.0);
        return recorded;
    }
    store::RecordedParked record_parked_releases() override {
        std::lock_guard lock(world_.mutex);
        if (!world_.database_reachable) throw std::runtime_error("database unreachable");
        store::RecordedParked recorded;
        if (world_.parked.empty()) {
            ++world_.parked_checks;
            return recorded;
        }
        ++world_.parked_tries;
        std::string ids;
        std::size_t taken = 0;
        std::erase_if(world_.parked, [&](const ObservedRelease& release) {
            if (world_.locked.contains(release.id) || taken == world_.parked_batch) return false;
            ++taken;
            ids += (ids.empty() ? "" : ",") + release.id;
            world_.recorded_ids.push_back(release.id);
            recorded.lateness_ms.push_back(1.0);
            return true;
        });
        if (!ids.empty()) world_.log.push_back("record parked " + ids);
        recorded.unparked = recorded.lateness_ms.size();
        recorded.still_parked = world_.parked.size();
        return recorded;
    }

private:
    FakeWorld& world_;
};

class AuditSessionTest : public ::testing::Test {
protected:
    FakeWorld world;
    AuditOptions options;
    std::jthread audit;
    std::stop_source stop;
    // Runs when the fake feed opens the n-th time (1 = the first session).
    std::function<void(int)> on_feed_opened = [](int) {};

    void start() {
        AuditSeams seams;
        seams.open_store = [this](const store::StoreOptions&) {
            return std::make_unique<FakeStore>(world);
        };
        seams.open_feed = [this](const AuditOptions&) {
            int opened;
            {
                std::lock_guard lock(world.mutex);
                opened = ++world.feeds_opened;
            }
            on_feed_opened(opened);
            return std::make_unique<FakeFeed>(world);
        };
        seams.now = [this] { return Micros{std::chrono::microseconds{world.now_us.load()}}; };
        audit = std::jthread([this, seams] { run_audit(options, stop.get_token(), seams); });
    }
    void finish() {
        stop.request_stop();
        if (audit.joinable()) audit.join();
    }
    // A failed ASSERT leaves the session running: stop it so the next test can start.
    void TearDown() override { finish(); }
    // Waits (at most 5 s) until `done` holds over the events so far.
    template <typename Predicate>
    bool eventually(Predicate done) {
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        while (std::chrono::steady_clock::now() < deadline) {
            if (done(world.events())) return true;
            std::this_thread::sleep_for(2ms);
        }
        return false;
    }
    static auto has_size(std::size_t n) {
        return [n](const std::vector<std::string>& events) { return events.size() >= n; };
    }
};

TEST_F(AuditSessionTest, releases_arriving_together_are_recorded_after_batch_wait_then_acked) {
    options.batch_wait = 20ms;
    for (const auto* id : {"a", "b", "c"}) world.deliver(released_copy(id));
    start();
    ASSERT_TRUE(eventually([](const auto& events) {
        return !events.empty() && events.back() == "ack 3";
    }));
    finish();
    // Usually one batch; a slow machine may split it, but every ack follows its record.
    const auto events = world.events();
    ASSERT_EQ(events.size() % 2, 0u);
    for (std::size_t i = 0; i < events.size(); i += 2) {
        EXPECT_TRUE(events[i].starts_with("record ")) << events[i];
        EXPECT_TRUE(events[i + 1].starts_with("ack ")) << events[i + 1];
    }
    EXPECT_EQ(world.recorded_ids, (std::vector<std::string>{"a", "b", "c"}));
}

// The audit says how far behind the releases its queue is, from the freshest copy of each
// batch: the loader waits that much longer before it takes a run for lost (a backlog re-sent
// as lost only grew: bench/journal/2026-12-06-owners-and-audit-lag.md).
TEST_F(AuditSessionTest, each_batch_says_how_far_behind_the_releases_the_audit_is) {
    options.batch_wait = 20ms;
    options.health = std::make_shared<health::ServiceHealth>(std::make_shared<metrics::ServiceMetrics>());
    world.deliver(released_copy("old", {}, true, "2026-11-25T11:58:00.000Z"));
    world.deliver(released_copy("behind", {}, true, "2026-11-25T11:58:30.000Z"));
    start();
    ASSERT_TRUE(eventually(has_size(2)));
    EXPECT_EQ(options.health->audit_behind(), 90s) << "the freshest copy of the batch";
    world.deliver(released_copy("fresh"));  // due at noon, arriving at noon
    ASSERT_TRUE(eventually(has_size(4)));
    EXPECT_EQ(options.health->audit_behind(), 0s);
}

// Release probes (delay/topology.hpp): one a second, each acked unrecorded and noted in the
// service's health when it comes back; while the broker holds them (an alarm) the health says
// the broker does not release, and once it lets them go, since when it releases again.
TEST_F(AuditSessionTest, probes_go_out_every_second_and_their_return_says_the_broker_releases) {
    options.batch_wait = 20ms;
    options.health = std::make_shared<health::ServiceHealth>(std::make_shared<metrics::ServiceMetrics>());
    const auto releasing_since = [&] {
        return options.health->releasing_since(TimePoint{Milliseconds{world.now_us / 1000}});
    };
    world.set_releasing(true);
    start();
    ASSERT_TRUE(eventually([](const auto& events) { return !events.empty() && events.back() == "ack 1"; }));
    EXPECT_EQ(releasing_since(), TimePoint{std::chrono::duration_cast<Milliseconds>(kNoon.time_since_epoch())});
    EXPECT_TRUE(world.recorded_ids.empty()) << "a probe is no release";

    world.set_releasing(false);  // an alarm: probes sent, none back
    world.now_us += 6'000'000;
    EXPECT_TRUE(eventually([&](const auto&) {
        std::lock_guard lock(world.mutex);
        return world.blocked_probes.size() >= 1;
    })) << "the next probe goes out a second after the first";
    EXPECT_EQ(releasing_since(), std::nullopt);

    world.set_releasing(true);  // the alarm ends: the probes held come back
    ASSERT_TRUE(eventually([&](const auto&) { return releasing_since().has_value(); }));
    EXPECT_EQ(releasing_since(), TimePoint{std::chrono::duration_cast<Milliseconds>(kNoon.time_since_epoch()) + 6s});
}

TEST_F(AuditSessionTest, a_full_batch_is_recorded_at_once_and_the_rest_waits_for_batch_wait) {
    options.batch_size = 2;
    options.batch_wait = 1h;
    for (const auto* id : {"a", "b", "c", "d", "e"}) world.deliver(released_copy(id));
    start();
    ASSERT_TRUE(eventually(has_size(4)));
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(world.events(),
              (std::vector<std::string>{"record a,b", "ack 2", "record c,d", "ack 4"}));
    finish();  // a stop records and acks what is in hand
    EXPECT_EQ(world.events(), (std::vector<std::string>{"record a,b", "ack 2", "record c,d",
                                                        "ack 4", "record e", "ack 5"}));
}

TEST_F(AuditSessionTest, nothing_is_acked_while_the_database_refuses_and_all_is_recorded_after) {
    options.batch_size = 2;
    options.batch_wait = 1h;
    world.database_reachable = false;
    world.deliver(released_copy("a"));
    world.deliver(released_copy("b"));
    start();
    ASSERT_TRUE(eventually([&](const auto&) {
        std::lock_guard lock(world.mutex);
        return world.feeds_opened >= 2;  // the failed batch ended the session: reconnected
    }));
    EXPECT_TRUE(world.events().empty());
    {
        std::lock_guard lock(world.mutex);
        world.database_reachable = true;
    }
    // The copies went back to the queue with the lost session; the next one records them.
    ASSERT_TRUE(eventually(has_size(2)));
    finish();
    EXPECT_EQ(world.events(), (std::vector<std::string>{"record a,b", "ack 2"}));
}

// A copy whose run's row another transaction holds is parked and acked with the others, so
// that no number of them fills the prefetch window; it is recorded once the lock is gone.
TEST_F(AuditSessionTest, a_copy_whose_row_another_transaction_holds_is_parked_and_acked_at_once) {
    options.batch_size = 3;
    options.batch_wait = 1h;
    world.locked = {"b"};
    for (const auto* id : {"a", "b", "c"}) world.deliver(released_copy(id));
    start();
    ASSERT_TRUE(eventually(has_size(2)));
    EXPECT_EQ(world.events(), (std::vector<std::string>{"record a,(b parked),c", "ack 3"}));
    std::this_thread::sleep_for(1s);
    {
        // Tried again after 250, then 500 ms: no spin.
        std::lock_guard lock(world.mutex);
        EXPECT_GE(world.parked_tries, 1);
        EXPECT_LE(world.parked_tries, 3);
        world.locked.clear();
    }
    ASSERT_TRUE(eventually([](const auto& events) { return events.back() == "record parked b"; }));
    EXPECT_EQ(world.recorded_ids, (std::vector<std::string>{"a", "c", "b"}));
    // With nothing parked, it looks again every 5 s only.
    const auto checks = [&] {
        std::lock_guard lock(world.mutex);
        return world.parked_checks;
    };
    const auto before = checks();
    std::this_thread::sleep_for(1s);
    EXPECT_LE(checks() - before, 1);
    finish();
    EXPECT_EQ(world.events().size(), 3u);
}

// Once the lock is gone, a record of the parked that took a full batch is followed by the next
// at once, not at the retry's pace (0.25-4 s), so that a lock on many rows ends in seconds.
TEST_F(AuditSessionTest, parked_releases_are_recorded_batch_after_batch_once_the_lock_is_gone) {
    options.batch_size = 5;
    options.batch_wait = 1h;
    world.parked_batch = 1;
    world.locked = {"a", "b", "c", "d", "e"};
    for (const auto* id : {"a", "b", "c", "d", "e"}) world.deliver(released_copy(id));
    start();
    ASSERT_TRUE(eventually(has_size(2)));
    std::this_thread::sleep_for(300ms);  // a first retry found them all still held
    {
        std::lock_guard lock(world.mutex);
        world.locked.clear();
    }
    const auto unlocked = std::chrono::steady_clock::now();
    ASSERT_TRUE(eventually([](const auto& events) { return events.back() == "record parked e"; }));
    // The retry's next try comes 500 ms after the first; the four more follow it at once.
    EXPECT_LT(std::chrono::steady_clock::now() - unlocked, 700ms);
    EXPECT_EQ(world.recorded_ids, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
}

// What another instance parked before it stopped is recorded by the next audit that starts.
TEST_F(AuditSessionTest, releases_parked_by_another_instance_are_recorded_at_start) {
    world.parked.push_back(*observed_release(released_copy("p"), kNoon));
    start();
    ASSERT_TRUE(eventually(
        [](const auto& events) { return !events.empty() && events.back() == "record parked p"; }));
    EXPECT_EQ(world.recorded_ids, (std::vector<std::string>{"p"}));
}

TEST_F(AuditSessionTest, a_message_without_hourglass_headers_is_acked_with_the_batch_unrecorded) {
    options.batch_size = 1;
    options.batch_wait = 1h;
    world.deliver(released_copy("stray", {}, /*with_headers=*/false));
    world.deliver(released_copy("a"));
    start();
    ASSERT_TRUE(eventually(has_size(2)));
    finish();
    EXPECT_EQ(world.events(), (std::vector<std::string>{"record a", "ack 2"}));
}

TEST_F(AuditSessionTest, copies_dead_lettered_while_the_broker_went_down_are_acked_unrecorded) {
    options.batch_size = 3;
    options.batch_wait = 1h;
    // The audit loses the broker at noon and consumes again at 12:00:30.
    on_feed_opened = [this](int opened) {
        if (opened == 2) world.now_us = (kNoon + 30s).time_since_epoch().count();
    };
    world.deliver(released_copy("before", {death(kNoonSeconds - 60)}));
    world.lose_connection();
    world.deliver(released_copy("at-the-loss", {death(kNoonSeconds)}));
    world.deliver(released_copy("while-down", {death(kNoonSeconds + 20)}));
    world.deliver(released_copy("after", {death(kNoonSeconds + 31)}));
    world.deliver(released_copy("no-x-death"));
    start();
    ASSERT_TRUE(eventually(has_size(2)));
    finish();
    // "before" came back with the lost session; the two copies dead-lettered from 2 s before
    // the loss until the audit was back are acked and left enqueued, for the re-send.
    EXPECT_EQ(world.events(),
              (std::vector<std::string>{"record before,after,no-x-death", "ack 5"}));
}

// A connection the broker closed while running (from the management API) is no outage: its
// delay queues dead-lettered as ever, so the copies of that time are recorded, not doubted and
// re-sent (each re-send of a delivered run is a duplicate). A shutdown's close still is.
TEST_F(AuditSessionTest, a_connection_closed_by_a_running_broker_doubts_nothing) {
    options.batch_size = 1;
    options.batch_wait = 1h;
    on_feed_opened = [this](int opened) {
        if (opened == 2) world.now_us = (kNoon + 30s).time_since_epoch().count();
        if (opened == 3) world.now_us = (kNoon + 90s).time_since_epoch().count();
    };
    world.lose_connection("CONNECTION_FORCED - Closed via management plugin");
    world.deliver(released_copy("while-closed", {death(kNoonSeconds + 20)}));
    world.lose_connection("CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'");
    world.deliver(released_copy("while-shut-down", {death(kNoonSeconds + 60)}));
    world.deliver(released_copy("after", {death(kNoonSeconds + 91)}));
    start();
    ASSERT_TRUE(eventually(has_size(4))) << ::testing::PrintToString(world.events());
    finish();
    // The copy of the shutdown's time is acked unrecorded (with the next record), for the re-send.
    EXPECT_EQ(world.events(), (std::vector<std::string>{"record while-closed", "ack 1",
                                                        "record after", "ack 2"}));
}

TEST_F(AuditSessionTest, with_quorum_delay_queues_nothing_is_doubted_after_an_outage) {
    options.batch_size = 1;
    options.batch_wait = 1h;
    options.doubt_releases_around_outages = false;
    on_feed_opened = [this](int opened) {
        if (opened == 2) world.now_us = (kNoon + 30s).time_since_epoch().count();
    };
    world.lose_connection();
    world.deliver(released_copy("while-down", {death(kNoonSeconds + 20)}));
    start();
    ASSERT_TRUE(eventually(has_size(2)));
    finish();
    EXPECT_EQ(world.events(), (std::vector<std::string>{"record while-down", "ack 1"}));
}

// A burst: the first batch recorded 1,000 runs in about 20 ms, far above 1,000 runs/s. The copies that
// follow are held while they keep coming, and recorded together once they stop, so the
// database does its work after the broker's drain and not during it.
TEST_F(AuditSessionTest, in_a_burst_copies_are_recorded_together_once_they_stop_coming) {
    options.batch_wait = 20ms;
    options.burst_runs_per_second = 1000;
    options.burst_quiet = 400ms;
    options.burst_hold = 1h;
    world.runs_per_copy = 1000;
    world.deliver(released_copy("a"));
    start();
    ASSERT_TRUE(eventually(has_size(2)));
    std::string held;
    for (const auto* id : {"b", "c", "d", "e", "f", "g", "h", "i"}) {
        world.deliver(released_copy(id));
        held += (held.empty() ? "" : ",") + std::string(id);
        std::this_thread::sleep_for(25ms);  // longer than batch_wait, shorter than burst_quiet
        EXPECT_EQ(world.events().size(), 2u) << "recorded while copies still came";
    }
    ASSERT_TRUE(eventually(has_size(4)));
    finish();
    EXPECT_EQ(world.events(),
              (std::vector<std::string>{"record a", "ack 1", "record " + held, "ack 9"}));
}

// Copies that never stop coming (a sustained burst) are still recorded burst_hold after the
// first of a batch.
TEST_F(AuditSessionTest, in_a_sustained_burst_a_batch_is_recorded_burst_hold_after_its_first) {
    options.batch_wait = 20ms;
    options.burst_runs_per_second = 1000;
    options.burst_quiet = 1h;
    options.burst_hold = 100ms;
    world.runs_per_copy = 1000;
    world.deliver(released_copy("first"));
    start();
    ASSERT_TRUE(eventually(has_size(2)));
    bool recorded_while_coming = false;
    for (int i = 0; i < 60 && !recorded_while_coming; ++i) {
        world.deliver(released_copy("c" + std::to_string(i)));
        std::this_thread::sleep_for(10ms);
        recorded_while_coming = world.events().size() > 2;
    }
    EXPECT_TRUE(recorded_while_coming);
}

// A burst's batch holds no more copies than the prefetch lets the broker send: at that many it
// is recorded at once (waiting for a quiet that cannot come would stall the audit).
TEST_F(AuditSessionTest, in_a_burst_a_batch_of_prefetch_copies_is_recorded_at_once) {
    options.batch_wait = 20ms;
    options.burst_runs_per_second = 1000;
    options.burst_quiet = 1h;
    options.burst_hold = 1h;
    options.prefetch = 3;
    world.runs_per_copy = 1000;
    world.deliver(released_copy("a"));
    start();
    ASSERT_TRUE(eventually(has_size(2)));
    for (const auto* id : {"b", "c", "d", "e"}) world.deliver(released_copy(id));
    ASSERT_TRUE(eventually(has_size(4)));
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(world.events(),
              (std::vector<std::string>{"record a", "ack 1", "record b,c,d", "ack 4"}));
}

// Copies of a steady load that queued up (behind a slow record, or a busy thread) come all at
// once, but their runs were due at a steady pace: that is no burst, and the copy that follows
// is recorded batch_wait after it came, not held until copies stop coming. Taken for a burst,
// a steady 1,000 runs/s was recorded 10,000 runs at a time, and the broker released late
// while PostgreSQL ran those statements (bench/journal/2026-11-22-to-12-04.md).
TEST_F(AuditSessionTest, copies_that_queued_up_are_no_burst_when_their_runs_were_due_apart) {
    options.batch_wait = 20ms;
    options.burst_runs_per_second = 1000;
    options.burst_quiet = 1h;
    options.burst_hold = 1h;
    world.runs_per_copy = 1;
    // 100 runs due 2 ms apart (500 a second), all waiting before the audit starts.
    for (int i = 0; i < 100; ++i) {
        char due[32];
        std::snprintf(due, sizeof due, "2026-11-25T12:00:%02d.%03dZ", i * 2 / 1000,
                      i * 2 % 1000);
        world.deliver(released_copy("q" + std::to_string(i), {}, true, due));
    }
    start();
    ASSERT_TRUE(eventually([](const auto& events) {
        return std::find(events.begin(), events.end(), "ack 100") != events.end();
    }));
    world.deliver(released_copy("next", {}, true, "2026-11-25T12:00:00.200Z"));
    EXPECT_TRUE(eventually([](const auto& events) {
        return std::find(events.begin(), events.end(), "record next") != events.end();
    })) << "a steady load's copy was held as in a burst";
}

// Below the burst rate nothing is held: each copy of a trickle is recorded batch_wait after it
// came, as before.
TEST_F(AuditSessionTest, a_trickle_of_releases_is_recorded_batch_wait_after_each_copy) {
    options.batch_wait = 20ms;
    options.burst_runs_per_second = 1000;
    options.burst_quiet = 1h;
    options.burst_hold = 1h;
    world.runs_per_copy = 1;  // 1 run per 20 ms batch: 50 runs/s
    start();
    for (const auto* id : {"a", "b", "c"}) {
        world.deliver(released_copy(id));
        ASSERT_TRUE(eventually([id](const auto& events) {
            return std::find(events.begin(), events.end(), std::string("record ") + id) != events.end();
        }));
    }
}

}  // namespace
}  // namespace hourglass::audit
