// The ingest session with a fake broker channel and a fake store (IngestSeams): a batch is
// acked once, after it is committed and after its rejected copies are confirmed; nothing is
// acked when the database or the broker refuses; x-delay counts from the receive time; the
// loader is woken only for jobs due within the horizon; commands for a job locked by another
// transaction wait, in order and bounded, without holding up the others.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <pqxx/except>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ingest/ingest.hpp"
#include "support/fake_deliveries.hpp"

namespace hourglass::ingest {
namespace {

using namespace std::chrono_literals;

const TimePoint kNoon{std::chrono::sys_days{std::chrono::year{2026} / 11 / 25}.time_since_epoch() +
                      12h};

// The broker and the database as the fakes share them; `log` is what happened, in order.
struct FakeWorld {
    std::mutex mutex;
    std::deque<Message> queue;  // <prefix>.in
    std::vector<std::string> log;  // "apply 3", "publish hourglass.rejected", "confirm 1", "ack 3"
    std::vector<Message> published;
    std::vector<ScheduleCommand> stored;
    bool database_reachable = true;
    std::set<std::string> locked_ids;  // rows another transaction keeps locked past lock_timeout
    bool refuse_publishes = false;  // basic.nack every publish
    int channels_opened = 0;

    void send(Message command) {
        std::lock_guard lock(mutex);
        queue.push_back(std::move(command));
    }
    std::vector<std::string> events() {
        std::lock_guard lock(mutex);
        return log;
    }
};

// One connection: delivery tags and publish sequence numbers count from 1; commands not acked
// go back to the queue when it closes; each publish is confirmed (or refused) on the next read.
class FakeChannel final : public CommandChannel {
public:
    explicit FakeChannel(FakeWorld& world) : world_(world), deliveries_(world.queue) {}
    ~FakeChannel() override {
        std::lock_guard lock(world_.mutex);
        deliveries_.requeue();
    }
    std::optional<amqp::Event> next_event(std::chrono::microseconds timeout) override {
        {
            std::lock_guard lock(world_.mutex);
            if (!pending_confirms_.empty()) {
                amqp::Confirm confirm;
                confirm.delivery_tag = pending_confirms_.front();
                confirm.ack = !world_.refuse_publishes;
                pending_confirms_.pop_front();
                world_.log.push_back((confirm.ack ? "confirm " : "nack ") +
                                     std::to_string(confirm.delivery_tag));
                return amqp::Event{confirm};
            }
            if (!world_.queue.empty()) {
                auto message = std::move(world_.queue.front());
                world_.queue.pop_front();
                return amqp::Event{deliveries_.deliver(std::move(message))};
            }
        }
        std::this_thread::sleep_for(std::min<std::chrono::microseconds>(timeout, 1ms));
        return std::nullopt;
    }
    std::uint64_t publish(const Message& message) override {
        std::lock_guard lock(world_.mutex);
        world_.log.push_back("publish " + (message.exchange.empty() ? "reply " + message.routing_key
                                                                    : message.exchange));
        world_.published.push_back(message);
        pending_confirms_.push_back(++sequence_);
        return sequence_;
    }
    void ack_through(std::uint64_t delivery_tag) override {
        std::lock_guard lock(world_.mutex);
        world_.log.push_back("ack " + std::to_string(delivery_tag));
        deliveries_.ack(delivery_tag, true);
    }
    void ack(std::uint64_t delivery_tag) override {
        std::lock_guard lock(world_.mutex);
        world_.log.push_back("ack one " + std::to_string(delivery_tag));
        deliveries_.ack(delivery_tag, false);
    }
    std::size_t frame_max() const override { return 131072; }

private:
    FakeWorld& world_;
    hourglass::testing::FakeDeliveries<std::deque<Message>> deliveries_;
    std::uint64_t sequence_ = 0;
    std::deque<std::uint64_t> pending_confirms_;
};

// Schedules everything as new jobs; rejections pass through, as in store::JobStore.
class FakeStore final : public store::CommandStore {
public:
    explicit FakeStore(FakeWorld& world) : world_(world) {}
    std::vector<CommandOutcome> apply(std::span<const Command> commands,
                                      const InsertClaimOffer* claims) override {
        std::lock_guard lock(world_.mutex);
        if (!world_.database_reachable) throw std::runtime_error("connection to server lost");
        for (const auto& command : commands) {
            if (world_.locked_ids.count(command.id)) {
                world_.log.push_back("lock timeout on " + command.id);
                throw pqxx::sql_error("ERROR:  canceling statement due to lock timeout", "",
                                      "55P03");
            }
        }
        world_.log.push_back("apply " + std::to_string(commands.size()));
        std::vector<CommandOutcome> outcomes;
        for (const auto& command : commands) {
            if (const auto* rejection = std::get_if<Rejection>(&command.action)) {
                outcomes.push_back({CommandStatus::rejected, std::nullopt, rejection->error});
            } else if (const auto* schedule = std::get_if<ScheduleCommand>(&command.action)) {
                world_.stored.push_back(*schedule);
                const bool claimed = claims && schedule->claim_at_insert;
                if (claimed) world_.log.push_back("lease " + schedule->id + " to " + claims->owner);
                outcomes.push_back({CommandStatus::scheduled, schedule->due_at, {}, claimed});
            } else {
                outcomes.push_back({CommandStatus::not_found, std::nullopt, {}});
            }
        }
        return outcomes;
    }
    void record_rejections(const std::vector<store::RecordedRejection>& rejections) override {
        std::lock_guard lock(world_.mutex);
        if (!rejections.empty()) {
            world_.log.push_back("keep " + std::to_string(rejections.size()) + " rejections");
        }
    }

private:
    FakeWorld& world_;
};

Message command(const std::string& id, FieldTable headers) {
    Message message;
    message.exchange = "hourglass.in";
    message.routing_key = "jobs." + id;
    message.body = "body of " + id;
    message.properties.message_id = id;
    message.properties.headers = std::move(headers);
    return message;
}

Message delayed(const std::string& id, std::int64_t delay_ms) {
    return command(id, {{"x-delay", delay_ms}});
}

class IngestSessionTest : public ::testing::Test {
protected:
    FakeWorld world;
    IngestOptions options;
    std::stop_source stop;
    std::jthread ingest;
    std::atomic<int> wakes{0};
    std::atomic<TimePoint> earliest_due_woken_for{};
    // The loader as ingest sees it: wakes (start() sets it), and claims at insert if a test
    // sets them.
    LoaderLink loader;

    void start() {
        loader.wake = [this](TimePoint due) {
            earliest_due_woken_for = due;
            ++wakes;
        };
        IngestSeams seams;
        seams.open_store = [this](const store::StoreOptions&) {
            return std::make_unique<FakeStore>(world);
        };
        seams.open_channel = [this](const IngestOptions&) {
            {
                std::lock_guard lock(world.mutex);
                ++world.channels_opened;
            }
            return std::make_unique<FakeChannel>(world);
        };
        seams.now = [] { return kNoon; };
        ingest = std::jthread([this, seams] {
            run_ingest(options, loader, stop.get_token(), seams);
        });
    }
    void finish() {
        stop.request_stop();
        if (ingest.joinable()) ingest.join();
    }
    // A failed ASSERT leaves the session running: stop it so the next test can start.
    void TearDown() override { finish(); }
    template <typename Predicate>
    bool eventually(Predicate done) {
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        while (std::chrono::steady_clock::now() < deadline) {
            if (done(world.events())) return true;
            std::this_thread::sleep_for(2ms);
        }
        return false;
    }
    static auto ends_with(std::string last) {
        return [last](const std::vector<std::string>& events) {
            return !events.empty() && events.back() == last;
        };
    }
};

TEST_F(IngestSessionTest, a_batch_is_committed_then_acked_once_and_x_delay_counts_from_receipt) {
    options.batch_size = 3;
    options.batch_wait = 1h;
    world.send(delayed("a", 1000));
    world.send(delayed("b", 2000));
    world.send(delayed("c", 3000));
    start();
    ASSERT_TRUE(eventually(ends_with("ack 3")));
    finish();
    EXPECT_EQ(world.events(), (std::vector<std::string>{"apply 3", "ack 3"}));
    ASSERT_EQ(world.stored.size(), 3u);
    EXPECT_EQ(world.stored[0].id, "a");
    EXPECT_EQ(world.stored[0].due_at, kNoon + 1s);
    EXPECT_EQ(world.stored[2].due_at, kNoon + 3s);
    EXPECT_EQ(world.stored[1].accepted_at, kNoon);
}

TEST_F(IngestSessionTest, a_rejected_command_is_acked_only_after_its_copy_is_confirmed) {
    options.batch_size = 2;
    options.batch_wait = 1h;
    world.send(delayed("good", 1000));
    world.send(command("bad", {{"x-delay", std::string("soon")}}));
    start();
    ASSERT_TRUE(eventually(ends_with("ack 2")));
    finish();
    EXPECT_EQ(world.events(),
              (std::vector<std::string>{"apply 2", "keep 1 rejections", "publish hourglass.rejected",
                                        "confirm 1", "ack 2"}));
    ASSERT_EQ(world.published.size(), 1u);
    const auto* error = find_header(world.published[0].properties, header::kError);
    ASSERT_NE(error, nullptr);
    EXPECT_TRUE(std::get<std::string>(error->value).starts_with("x-delay")) << std::get<std::string>(error->value);
    EXPECT_EQ(world.published[0].body, "body of bad");
}

TEST_F(IngestSessionTest, a_refused_rejected_copy_leaves_the_batch_unacked_to_be_taken_again) {
    options.batch_size = 1;
    options.batch_wait = 1h;
    world.refuse_publishes = true;
    world.send(command("bad", {}));  // no time header
    start();
    ASSERT_TRUE(eventually([&](const auto&) {
        std::lock_guard lock(world.mutex);
        return world.channels_opened >= 2;
    }));
    for (const auto& event : world.events()) EXPECT_FALSE(event.starts_with("ack")) << event;
    {
        std::lock_guard lock(world.mutex);
        world.refuse_publishes = false;
    }
    ASSERT_TRUE(eventually(ends_with("ack 1")));
    finish();
    EXPECT_EQ(world.published.back().exchange, options.names.rejected);
}

TEST_F(IngestSessionTest, nothing_is_acked_while_the_database_is_unreachable) {
    options.batch_size = 2;
    options.batch_wait = 1h;
    world.database_reachable = false;
    world.send(delayed("a", 1000));
    world.send(delayed("b", 1000));
    start();
    ASSERT_TRUE(eventually([&](const auto&) {
        std::lock_guard lock(world.mutex);
        return world.channels_opened >= 2;
    }));
    EXPECT_TRUE(world.events().empty());
    {
        std::lock_guard lock(world.mutex);
        world.database_reachable = true;
    }
    ASSERT_TRUE(eventually(ends_with("ack 2")));
    finish();
    EXPECT_EQ(world.events(), (std::vector<std::string>{"apply 2", "ack 2"}));
    EXPECT_EQ(world.stored.size(), 2u);
}

TEST_F(IngestSessionTest, a_receipt_goes_to_x_reply_to_and_its_confirm_precedes_the_ack) {
    options.batch_size = 1;
    options.batch_wait = 1h;
    auto asked = command("a", {{"x-delay", std::int64_t{1000}}, {"x-reply-to", std::string("my-replies")}});
    asked.properties.correlation_id = "c-1";
    world.send(std::move(asked));
    start();
    ASSERT_TRUE(eventually(ends_with("ack 1")));
    finish();
    EXPECT_EQ(world.events(), (std::vector<std::string>{"apply 1", "publish reply my-replies",
                                                        "confirm 1", "ack 1"}));
    EXPECT_EQ(world.published[0].properties.correlation_id, "c-1");
    EXPECT_NE(world.published[0].body.find("\"scheduled\""), std::string::npos)
        << world.published[0].body;
}

TEST_F(IngestSessionTest, the_loader_is_woken_only_for_jobs_due_within_the_horizon) {
    options.batch_size = 1;
    options.batch_wait = 1h;
    options.horizon = 60s;
    world.send(delayed("later", 61000));
    start();
    ASSERT_TRUE(eventually(ends_with("ack 1")));
    EXPECT_EQ(wakes.load(), 0);
    world.send(delayed("soon", 60000));
    ASSERT_TRUE(eventually(ends_with("ack 2")));
    finish();
    EXPECT_EQ(wakes.load(), 1);
    EXPECT_EQ(earliest_due_woken_for.load(), kNoon + 60s);
}

// The loader decides from the earliest due time whether to claim at once (Loader::wake_for).
TEST_F(IngestSessionTest, the_loader_is_told_the_earliest_due_time_a_commit_accepted) {
    options.batch_size = 3;
    options.batch_wait = 1h;
    world.send(delayed("b", 5000));
    world.send(delayed("a", 2000));
    world.send(delayed("c", 9000));
    start();
    ASSERT_TRUE(eventually(ends_with("ack 3")));
    finish();
    EXPECT_EQ(wakes.load(), 1);
    EXPECT_EQ(earliest_due_woken_for.load(), kNoon + 2s);
}

// Claims at insert: ingest asks the loader for room for the plain one-shot schedules due within
// the horizon, leases those that fit as it inserts them, and hands them over after the commit;
// the loader is woken only for the accepted jobs due within the horizon it did not claim.
class IngestInsertClaims : public IngestSessionTest {
protected:
    struct Adopted {
        std::string owner;
        std::vector<std::string> ids;
    };
    std::mutex adopted_mutex;
    std::vector<Adopted> adopted;  // one entry per offer ended, in order
    std::vector<std::pair<std::size_t, std::size_t>> asked;  // (runs, bytes) per offer asked
    std::size_t offered_runs = 1000;

    void link_claims() {
        loader.offer_claims = [this](std::size_t runs, std::size_t bytes) {
            std::lock_guard lock(adopted_mutex);
            asked.emplace_back(runs, bytes);
            return std::optional(InsertClaimOffer{.owner = "loader-1",
                                                  .lease = 31s,
                                                  .horizon_end = kNoon + 60s,
                                                  .runs = std::min(runs, offered_runs),
                                                  .bytes = bytes,
                                                  .epoch = 7});
        };
        loader.adopt_claims = [this](const InsertClaimOffer& offer, std::vector<ClaimedRun> runs) {
            std::lock_guard lock(adopted_mutex);
            Adopted entry{offer.owner, {}};
            for (const auto& run : runs) {
                EXPECT_EQ(run.run, 1);
                EXPECT_EQ(run.body, "body of " + run.id);
                EXPECT_EQ(run.routing_key, "jobs." + run.id);
                entry.ids.push_back(run.id);
            }
            adopted.push_back(std::move(entry));
        };
    }
    std::vector<Adopted> adoptions() {
        std::lock_guard lock(adopted_mutex);
        return adopted;
    }
};

TEST_F(IngestInsertClaims, jobs_due_within_the_horizon_are_leased_within_the_offer_and_handed_over) {
    options.batch_size = 5;
    options.batch_wait = 1h;
    options.horizon = 60s;
    offered_runs = 2;
    options.limits.first_cron_run = [](const CronSpec&, TimePoint after)
        -> std::variant<TimePoint, std::string> { return after + 30s; };
    link_claims();
    world.send(delayed("a", 1000));
    world.send(delayed("far", 61000));  // beyond the horizon: claimed later
    world.send(command("cron", {{"x-cron", std::string("* * * * *")}}));  // recurring: claimed
    world.send(delayed("b", 2000));
    world.send(delayed("c", 3000));  // within the horizon, past the offer's two runs
    start();
    ASSERT_TRUE(eventually(ends_with("ack 5")));
    finish();
    // The loader was asked for room for the three due within the horizon, 10 bytes each plus
    // their properties, and offered two.
    ASSERT_EQ(asked.size(), 1u);
    EXPECT_EQ(asked[0].first, 3u);
    EXPECT_GE(asked[0].second, 30u);
    EXPECT_EQ(world.events(),
              (std::vector<std::string>{"apply 5", "lease a to loader-1", "lease b to loader-1",
                                        "ack 5"}));
    const auto handed = adoptions();
    ASSERT_EQ(handed.size(), 1u);
    EXPECT_EQ(handed[0].owner, "loader-1");
    EXPECT_EQ(handed[0].ids, (std::vector<std::string>{"a", "b"}));
    // Woken for c only: the earliest accepted within the horizon that no claim at insert took.
    EXPECT_EQ(wakes.load(), 1);
    EXPECT_EQ(earliest_due_woken_for.load(), kNoon + 3s);
}

TEST_F(IngestInsertClaims, a_batch_that_fails_ends_its_offer_with_no_runs_and_is_not_acked) {
    options.batch_size = 1;
    options.batch_wait = 1h;
    link_claims();
    world.database_reachable = false;
    world.send(delayed("a", 1000));
    start();
    ASSERT_TRUE(eventually([&](const auto&) { return !adoptions().empty(); }));
    {
        std::lock_guard lock(world.mutex);
        world.database_reachable = true;
    }
    ASSERT_TRUE(eventually(ends_with("ack 1")));
    finish();
    const auto handed = adoptions();
    ASSERT_GE(handed.size(), 2u);
    for (std::size_t i = 0; i + 1 < handed.size(); ++i) {
        EXPECT_TRUE(handed[i].ids.empty()) << "attempt " << i << " leased nothing";
    }
    EXPECT_EQ(handed.back().ids, std::vector<std::string>{"a"});
}

TEST_F(IngestSessionTest, a_batch_ends_at_batch_bytes_of_bodies) {
    options.batch_size = 100;
    options.batch_wait = 1h;
    options.batch_bytes = 20;  // each body is 10 bytes ("body of aa")
    for (const auto* id : {"aa", "bb", "cc", "dd"}) world.send(delayed(id, 1000));
    start();
    ASSERT_TRUE(eventually(ends_with("ack 4")));
    finish();
    EXPECT_EQ(world.events(),
              (std::vector<std::string>{"apply 2", "ack 2", "apply 2", "ack 4"}));
}

// A job's row locked by another transaction (an operator's open one): its commands wait,
// unacked and in order, while the commands for other jobs are applied and acked; once the lock
// is gone they are applied, in the order they came.
TEST_F(IngestSessionTest, commands_for_a_locked_job_wait_in_order_and_the_others_go_on) {
    options.batch_size = 4;
    options.batch_wait = 1h;
    world.locked_ids = {"held"};
    world.send(delayed("a", 1000));
    world.send(delayed("held", 2000));
    world.send(delayed("b", 3000));
    world.send(delayed("held", 4000));  // the same job again: it must not overtake the first
    start();
    // a and b are applied and acked one by one (an ack through 3 would ack "held" too).
    ASSERT_TRUE(eventually([](const auto& events) {
        return std::count(events.begin(), events.end(), "ack one 3") == 1;
    }));
    {
        std::lock_guard lock(world.mutex);
        ASSERT_EQ(world.stored.size(), 2u);
        EXPECT_EQ(world.stored[0].id, "a");
        EXPECT_EQ(world.stored[1].id, "b");
        EXPECT_EQ(std::count(world.log.begin(), world.log.end(), "ack 1"), 1) << "a, through";
        for (const auto& event : world.log) {
            EXPECT_NE(event, "ack one 2");
            EXPECT_NE(event, "ack one 4");
        }
    }
    // Still locked a moment later: tried again, still not applied.
    std::this_thread::sleep_for(600ms);
    {
        std::lock_guard lock(world.mutex);
        EXPECT_GE(std::count(world.log.begin(), world.log.end(), "lock timeout on held"), 2);
        EXPECT_EQ(world.stored.size(), 2u);
        world.locked_ids.clear();
    }
    // Both applied in one round, acked through the last (nothing earlier waits any more).
    ASSERT_TRUE(eventually(ends_with("ack 4")));
    finish();
    std::lock_guard lock(world.mutex);
    ASSERT_EQ(world.stored.size(), 4u);
    EXPECT_EQ(world.stored[2].id, "held");
    EXPECT_EQ(world.stored[2].due_at, kNoon + 2s);
    EXPECT_EQ(world.stored[3].due_at, kNoon + 4s) << "the second command for the job came second";
}

// Clients decide how many commands come for a locked job: at most half the prefetch window
// waits, and the latest beyond it are rejected, so that new commands keep coming.
TEST_F(IngestSessionTest, at_most_half_the_prefetch_window_waits_for_locked_jobs) {
    options.batch_size = 5;
    options.batch_wait = 1h;
    options.prefetch = 4;
    world.locked_ids = {"held"};
    for (int i = 0; i < 4; ++i) world.send(delayed("held", 1000 + i));
    world.send(delayed("free", 1000));
    start();
    ASSERT_TRUE(eventually([](const auto& events) {
        return std::count(events.begin(), events.end(), "ack one 5") == 1;
    }));
    finish();
    std::lock_guard lock(world.mutex);
    ASSERT_EQ(world.stored.size(), 1u);
    EXPECT_EQ(world.stored[0].id, "free");
    // The first two wait (never acked); the last two were rejected, copies confirmed, acked.
    ASSERT_EQ(world.published.size(), 2u);
    for (const auto& copy : world.published) {
        const auto* error = find_header(copy.properties, header::kError);
        ASSERT_NE(error, nullptr);
        EXPECT_EQ(std::get<std::string>(error->value),
                  "job 'held' is locked by another PostgreSQL transaction, and 2 commands already "
                  "wait for locked jobs");
    }
    EXPECT_EQ(std::count(world.log.begin(), world.log.end(), "ack one 3"), 1);
    EXPECT_EQ(std::count(world.log.begin(), world.log.end(), "ack one 4"), 1);
    for (const auto& event : world.log) {
        EXPECT_NE(event, "ack one 1");
        EXPECT_NE(event, "ack one 2");
    }
}

// The waiting commands are tried again on time also while other commands keep coming: the
// batches going by do not postpone the retry.
TEST_F(IngestSessionTest, a_steady_stream_of_commands_does_not_postpone_the_retry) {
    options.batch_size = 1;
    options.batch_wait = 1h;
    world.locked_ids = {"held"};
    world.send(delayed("held", 1000));
    start();
    ASSERT_TRUE(eventually([](const auto& events) {
        return std::count(events.begin(), events.end(), "lock timeout on held") >= 1;
    }));
    std::atomic<bool> streaming{true};
    std::jthread stream([&] {
        for (int i = 0; streaming; ++i) {
            world.send(delayed("stream-" + std::to_string(i), 1000));
            std::this_thread::sleep_for(20ms);
        }
    });
    std::this_thread::sleep_for(300ms);
    {
        std::lock_guard lock(world.mutex);
        world.locked_ids.clear();
    }
    const auto unlocked = std::chrono::steady_clock::now();
    const bool applied = eventually([&](const auto&) {
        std::lock_guard lock(world.mutex);
        return std::any_of(world.stored.begin(), world.stored.end(),
                           [](const auto& job) { return job.id == "held"; });
    });
    const auto took = std::chrono::steady_clock::now() - unlocked;
    streaming = false;
    stream.join();
    finish();
    EXPECT_TRUE(applied);
    EXPECT_LT(took, 2s) << "the retry waits at most its backoff (here 0.5-1 s), stream or not";
}

}  // namespace
}  // namespace hourglass::ingest
