// Several instances share one broker and one database (SPEC §5.2, §8): every job is released
// exactly once under steady load, and when one instance dies the others take its claims over
// once their lease expires, losing nothing.
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
    };
    Tally tally(Client& receiver, const std::string& id_prefix, int jobs) {
        std::map<std::string, int> seen;
        Tally result;
        for (const auto& r : receiver.drain(5000ms, 90s)) {
            const auto due = parse_rfc3339(string_header(r.message, "x-hourglass-due"));
            if (due && r.received_at < *due) ++result.early;
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

}  // namespace
}  // namespace hourglass::testing
