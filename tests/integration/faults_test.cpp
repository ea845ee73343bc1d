// Faults beyond a plain restart (issue: nothing lost under faults): hourglass killed while the
// audit records releases, and a broker resource alarm that blocks every publisher.
#include <thread>

#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;

class Faults : public HourglassTest {};

TEST_F(Faults, kill_during_audit_updates_loses_no_release_record) {
    // A short lease: runs the killed instance had claimed are taken over quickly.
    const std::vector<std::string> flags = {"--lease", "2s"};
    auto* first = &start_hourglass(flags);
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    constexpr int kJobs = 3000;
    std::vector<Message> jobs;
    for (int i = 0; i < kJobs; ++i) jobs.push_back(delayed("audit-" + std::to_string(i), 1500));
    client.publish_all(jobs);
    // Releases start ~1.5 s after the commands; kill while the audit is recording them.
    ASSERT_TRUE(eventually("SELECT (count(*) > 0)::text FROM jobs WHERE state = 'done'", "true", 20s));
    first->kill_hard();
    const auto done_at_kill = sql("SELECT count(*) FROM jobs WHERE state = 'done'")[0][0].as<int>();
    start_hourglass(flags);

    std::map<std::string, int> seen;
    for (const auto& r : client.drain(4000ms, 60s)) ++seen[string_header(r.message, "x-hourglass-id")];
    std::cout << "[kill during audit] done at kill " << done_at_kill << " of " << kJobs
              << ", released " << seen.size() << " distinct\n";
    EXPECT_LT(done_at_kill, kJobs) << "the kill came too late to test anything";
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(kJobs));
    // Unacked audit copies are redelivered to the new instance: every job ends done.
    EXPECT_TRUE(eventually("SELECT count(*) FROM jobs WHERE state = 'done'", std::to_string(kJobs), 30s));
}

TEST_F(Faults, broker_memory_alarm_blocks_publishing_and_hourglass_waits_with_bounded_memory) {
    auto& process = start_hourglass({"--horizon", "5s"});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    constexpr int kJobs = 500;
    std::vector<Message> jobs;
    for (int i = 0; i < kJobs; ++i) jobs.push_back(delayed("alarm-" + std::to_string(i), 3000 + i));
    client.publish_all(jobs);
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs", std::to_string(kJobs)));

    // A memory alarm blocks every publishing connection, hourglass's loader included.
    services("rabbitmqctl", "set_vm_memory_high_watermark absolute 1");
    std::this_thread::sleep_for(6s);
    EXPECT_TRUE(process.running()) << "hourglass must wait, not fail";
    const auto resident = process.resident_bytes();
    EXPECT_LT(resident, 100u << 20) << "memory stays bounded while blocked";
    services("rabbitmqctl", "set_vm_memory_high_watermark 0.4");

    std::map<std::string, int> seen;
    for (const auto& r : client.drain(4000ms, 60s)) ++seen[string_header(r.message, "x-hourglass-id")];
    std::cout << "[memory alarm] RSS while blocked " << resident / 1024 << " KiB, released "
              << seen.size() << " of " << kJobs << "\n";
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(kJobs));
    EXPECT_TRUE(process.running());
}

}  // namespace
}  // namespace hourglass::testing
