// Several instances share one broker and one database (reference §6.2, §9): every job is released
// exactly once under steady load, and when one instance dies the others take its claims over
// within seconds (live leases, reference §6), losing nothing.
#include <thread>

#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;

class Instances : public HourglassTest {
protected:
    struct Tally {
        int lost = 0;
        int duplicates = 0;
        int early = 0;
        double max_late_ms = 0;  // latest release after its due time
    };
    Tally tally(Client& receiver, const std::string& id_prefix, int jobs) {
        std::map<std::string, int> seen;
        Tally result;
        for (const auto& r : receiver.drain(8000ms, 90s)) {
            const auto due = parse_rfc3339(string_header(r.message, "x-hourglass-due"));
            if (due && r.received_at < *due) ++result.early;
            if (due) {
                result.max_late_ms = std::max(
                    result.max_late_ms,
                    std::chrono::duration<double, std::milli>(r.received_at_us - *due).count());
            }
            ++seen[string_header(r.message, "x-hourglass-id")];
        }
        for (int i = 0; i < jobs; ++i) {
            const auto it = seen.find(id_prefix + std::to_string(i));
            if (it == seen.end()) ++result.lost;
            else result.duplicates += it->second - 1;
        }
        return result;
    }
    // Publishes `jobs` jobs in chunks over about `spread`, due 1-4 s after they are sent.
    void publish_steadily(const std::string& id_prefix, int jobs, std::chrono::milliseconds spread) {
        Client client(amqp_url_);
        const int chunks = 20;
        for (int chunk = 0; chunk < chunks; ++chunk) {
            std::vector<Message> batch;
            for (int i = chunk * jobs / chunks; i < (chunk + 1) * jobs / chunks; ++i) {
                batch.push_back(delayed(id_prefix + std::to_string(i), 1000 + (i * 13) % 3000));
            }
            client.publish_all(batch);
            std::this_thread::sleep_for(spread / chunks);
        }
    }
};

TEST_F(Instances, three_instances_release_each_job_exactly_once) {
    for (int i = 0; i < 3; ++i) start_hourglass();
    Client receiver(amqp_url_);
    receiver.subscribe(out_exchange(), "#");
    constexpr int kJobs = 3000;
    publish_steadily("multi-", kJobs, 3s);
    const auto result = tally(receiver, "multi-", kJobs);
    std::cout << "[3 instances] jobs " << kJobs << ", lost " << result.lost << ", duplicates "
              << result.duplicates << ", early " << result.early << "\n";
    EXPECT_EQ(result.lost, 0);
    EXPECT_EQ(result.duplicates, 0);
    EXPECT_EQ(result.early, 0);
    // The work was shared: more than one instance handed runs over.
    int instances_that_loaded = 0;
    for (const auto& process : processes_) {
        if (process->log_tail(100000).find("runs handed over") != std::string::npos) {
            ++instances_that_loaded;
        }
    }
    EXPECT_GE(instances_that_loaded, 2);
}

TEST_F(Instances, killing_one_of_three_loses_nothing) {
    const std::vector<std::string> flags = {"--lease", "2s"};
    for (int i = 0; i < 3; ++i) start_hourglass(flags);
    Client receiver(amqp_url_);
    receiver.subscribe(out_exchange(), "#");
    constexpr int kJobs = 3000;
    std::thread publisher([&] { publish_steadily("takeover-", kJobs, 3s); });
    std::this_thread::sleep_for(1500ms);
    processes_[1]->kill_hard();
    publisher.join();
    const auto result = tally(receiver, "takeover-", kJobs);
    std::cout << "[kill 1 of 3] jobs " << kJobs << ", lost " << result.lost << ", duplicates "
              << result.duplicates << ", early " << result.early << "\n";
    EXPECT_EQ(result.lost, 0);
    EXPECT_EQ(result.early, 0);
    EXPECT_TRUE(processes_[0]->running());
    EXPECT_TRUE(processes_[2]->running());
}

// Live leases (reference §6): with the default --lease (30 s), an instance killed with its claims
// in memory is taken over within seconds through the heartbeats, not after its lease.
TEST_F(Instances, a_killed_instance_is_taken_over_within_5_seconds_and_never_restarted) {
    // A short horizon: each instance always holds claims it has not published yet.
    const std::vector<std::string> flags = {"--horizon", "2s"};
    start_hourglass(flags);
    start_hourglass(flags);
    Client receiver(amqp_url_);
    receiver.subscribe(out_exchange(), "#");
    constexpr int kJobs = 2000;
    const auto first_due = now_ms() + 3s;
    Client(amqp_url_).publish_all(scheduled_series("live-", kJobs, first_due, 10ms));  // over 20 s
    // Kill one mid-way, while the receiver keeps reading (arrival times are when it reads).
    std::thread killer([&] {
        std::this_thread::sleep_for(first_due + 8s - now_ms());
        processes_[0]->kill_hard();
    });
    const auto result = tally(receiver, "live-", kJobs);
    killer.join();
    std::cout << "[kill 1 of 2, never restarted] jobs " << kJobs << ", lost " << result.lost
              << ", duplicates " << result.duplicates << ", early " << result.early
              << ", latest release " << result.max_late_ms << " ms after its due time\n";
    EXPECT_EQ(result.lost, 0);
    EXPECT_EQ(result.early, 0);
    EXPECT_LT(result.max_late_ms, 5000.0);
    EXPECT_TRUE(processes_[1]->running());
}

TEST_F(Instances, a_single_instance_killed_and_restarted_resumes_within_5_seconds) {
    const std::vector<std::string> flags = {"--horizon", "2s"};
    start_hourglass(flags);
    Client receiver(amqp_url_);
    receiver.subscribe(out_exchange(), "#");
    constexpr int kJobs = 500;
    const auto first_due = now_ms() + 2s;
    Client(amqp_url_).publish_all(scheduled_series("restart-", kJobs, first_due, 20ms));  // over 10 s
    std::thread restarter([&] {
        std::this_thread::sleep_for(first_due + 4s - now_ms());
        processes_[0]->kill_hard();
        start_hourglass(flags);  // a new process, a new owner id: the old one's claims are taken over
    });
    const auto result = tally(receiver, "restart-", kJobs);
    restarter.join();
    std::cout << "[kill -9 and restart] jobs " << kJobs << ", lost " << result.lost
              << ", duplicates " << result.duplicates << ", early " << result.early
              << ", latest release " << result.max_late_ms << " ms after its due time\n";
    EXPECT_EQ(result.lost, 0);
    EXPECT_EQ(result.early, 0);
    EXPECT_LT(result.max_late_ms, 5000.0);
}

}  // namespace
}  // namespace hourglass::testing
