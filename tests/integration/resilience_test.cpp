// Survives restarts of RabbitMQ and PostgreSQL (reference §9): hourglass reconnects with backoff,
// resumes, and loses nothing. Jobs due during an outage are released late, not lost.
#include <cstdlib>
#include <thread>

#include "delay/topology.hpp"
#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;

class Resilience : public HourglassTest {
protected:
    // A durable queue bound to the output exchange: it keeps releases across broker restarts.
    std::string durable_subscription(Client& client) {
        const auto queue = prefix_ + ".test-consumer";
        client.channel().declare_queue(queue, {{"x-queue-type", std::string("classic")}});
        client.channel().bind_queue(queue, out_exchange(), "#");
        return queue;
    }

    // A durable subscription, then `count` jobs "<id_prefix>-<i>" due first_delay_ms + 0..9 s.
    std::string subscribe_and_publish(const std::string& id_prefix, int count, std::int64_t first_delay_ms) {
        Client client(amqp_url_);
        const auto queue = durable_subscription(client);
        std::vector<Message> jobs;
        for (int i = 0; i < count; ++i) {
            jobs.push_back(delayed(id_prefix + "-" + std::to_string(i), first_delay_ms + (i * 37) % 9000));
        }
        client.publish_all(jobs);
        return queue;
    }

    struct Losses {
        int lost = 0;
        int duplicates = 0;
    };
    static Losses losses(const std::map<std::string, int>& seen, const std::string& id_prefix, int count) {
        Losses result;
        for (int i = 0; i < count; ++i) {
            const auto it = seen.find(id_prefix + "-" + std::to_string(i));
            if (it == seen.end()) ++result.lost;
            else result.duplicates += it->second - 1;
        }
        return result;
    }

    std::map<std::string, int> collect(const std::string& queue, std::size_t expected,
                                       std::chrono::seconds timeout, std::vector<double>* lateness) {
        Client client(amqp_url_);
        client.channel().consume(queue, /*no_ack=*/true);
        std::map<std::string, int> seen;
        std::size_t total = 0;
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (seen.size() < expected && std::chrono::steady_clock::now() < deadline) {
            auto received = client.receive(1s);
            if (!received) continue;
            ++total;
            const auto id = string_header(received->message, "x-hourglass-id");
            ++seen[id];
            const auto due = parse_rfc3339(string_header(received->message, "x-hourglass-due"));
            if (lateness && due) {
                lateness->push_back(std::chrono::duration<double, std::milli>(
                                        received->received_at_us - *due).count());
            }
        }
        // Anything still in flight shows up as a duplicate within a short grace period.
        for (auto extra = client.receive(1500ms); extra; extra = client.receive(500ms)) {
            ++seen[string_header(extra->message, "x-hourglass-id")];
        }
        client.channel().delete_queue(queue);
        return seen;
    }
};

TEST_F(Resilience, broker_restart_while_jobs_wait_in_the_delay_queues_loses_nothing) {
    start_hourglass({"--horizon", "4s"});
    constexpr int kJobs = 300;
    const auto queue = subscribe_and_publish("broker", kJobs, 5000);
    // Some runs wait in the delay queues, the rest in PostgreSQL. None is due before the broker
    // is down: a run expiring while a classic queue shuts down can be dropped by the broker
    // (its dead-lettering is at-most-once), a known gap tracked with the faults work.
    std::this_thread::sleep_for(1500ms);
    const auto stopped_at = std::chrono::steady_clock::now();
    services("stop-rabbit");
    std::this_thread::sleep_for(2s);
    services("start-rabbit");
    std::cout << "[broker restart] broker down for "
              << std::chrono::duration_cast<Milliseconds>(std::chrono::steady_clock::now() - stopped_at).count()
              << " ms\n";

    std::vector<double> lateness;
    const auto seen = collect(queue, kJobs, 60s, &lateness);
    const auto [lost, duplicates] = losses(seen, "broker", kJobs);
    std::sort(lateness.begin(), lateness.end());
    std::cout << "[broker restart] jobs " << kJobs << ", lost " << lost << ", duplicates "
              << duplicates << ", max lateness " << (lateness.empty() ? 0 : lateness.back())
              << " ms\n";
    EXPECT_EQ(lost, 0);
    EXPECT_TRUE(processes_.back()->running()) << "hourglass must reconnect, not exit";
}

// A run the broker loses after confirming it (e.g. it expires while a classic queue shuts
// down: classic dead-lettering is at most once) is still `enqueued` long after its due time;
// the loader publishes the same run again. Here the loss is made certain by purging the delay
// queues while the run waits in them.
TEST_F(Resilience, a_run_the_broker_lost_is_published_again) {
    start_hourglass({"--horizon", "4s", "--resend-after", "2s"});
    Client client(amqp_url_);
    const auto queue = durable_subscription(client);
    client.publish_all({delayed("lost-1", 3000)});
    ASSERT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'lost-1'", "enqueued"));
    std::uint32_t purged = 0;
    const delay::TopologyNames names(prefix_);
    const auto ladder = delay::DelayLadder::for_horizon(4s);
    for (const auto ttl : ladder.ttls()) {
        for (unsigned lane = 0; lane < delay::kDefaultDelayLanes; ++lane) {
            purged += client.channel().purge_queue(names.delay(ttl, lane)).value_or(0);
        }
    }
    ASSERT_EQ(purged, 1u) << "the run waited in one delay queue";

    const auto seen = collect(queue, 1, 20s, nullptr);
    EXPECT_EQ(seen.count("lost-1") ? seen.at("lost-1") : 0, 1) << "published again, once";
    EXPECT_TRUE(eventually("SELECT state || ':' || runs || ':' || released_run FROM jobs "
                           "WHERE id = 'lost-1'",
                           "done:1:1"))
        << "the same run (x-hourglass-run 1), recorded as released";
}

// Runs due while the broker shuts down, waits stopped and starts again: the ones it drops are
// published again, so none is lost (duplicates are allowed: at least once).
TEST_F(Resilience, runs_due_while_the_broker_restarts_are_not_lost) {
    start_hourglass({"--horizon", "4s", "--resend-after", "5s"});
    constexpr int kJobs = 300;
    const auto queue = subscribe_and_publish("shutdown", kJobs, 1000);
    std::this_thread::sleep_for(1500ms);  // some released, some due during the shutdown
    services("stop-rabbit");
    std::this_thread::sleep_for(2s);
    services("start-rabbit");

    const auto seen = collect(queue, kJobs, 90s, nullptr);
    const auto [lost, duplicates] = losses(seen, "shutdown", kJobs);
    std::cout << "[broker restart, runs due during shutdown] jobs " << kJobs << ", lost " << lost
              << ", duplicates " << duplicates << "\n";
    EXPECT_EQ(lost, 0);
    EXPECT_TRUE(eventually("SELECT count(*) FROM jobs WHERE state = 'done'",
                           std::to_string(kJobs), 30s));
}

TEST_F(Resilience, database_restart_mid_ingest_keeps_commands_until_they_commit) {
    start_hourglass();
    constexpr int kJobs = 100;
    Client client(amqp_url_);
    const auto queue = durable_subscription(client);
    services("stop-pg");
    std::vector<Message> jobs;
    for (int i = 0; i < kJobs; ++i) jobs.push_back(delayed("pg-" + std::to_string(i), 200));
    client.publish_all(jobs);
    std::this_thread::sleep_for(3s);
    EXPECT_TRUE(processes_.back()->running()) << "no crash while the database is down";
    // Nothing was acked: the commands wait in the input queue.
    auto waiting = client.queue_size(in_exchange());
    EXPECT_EQ(waiting.value_or(0) > 0, true);
    services("start-pg");

    const auto seen = collect(queue, kJobs, 60s, nullptr);
    int lost = 0;
    for (int i = 0; i < kJobs; ++i) lost += seen.count("pg-" + std::to_string(i)) ? 0 : 1;
    EXPECT_EQ(lost, 0);
    EXPECT_TRUE(processes_.back()->running());
    db_ = std::make_unique<pqxx::connection>(pg_url_);  // the test's own connection was cut too
    EXPECT_TRUE(eventually("SELECT count(*) FROM jobs WHERE state = 'done'", std::to_string(kJobs), 20s));
}

}  // namespace
}  // namespace hourglass::testing
