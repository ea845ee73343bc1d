// `--queue-type quorum` (SPEC §9): every hourglass queue is a quorum queue, the delay queues
// dead-letter at least once, and jobs flow as with classic queues.
#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;

class Quorum : public HourglassTest {};

TEST_F(Quorum, jobs_flow_through_quorum_delay_queues) {
    start_hourglass({"--queue-type", "quorum", "--horizon", "4s"});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    constexpr int kJobs = 200;
    std::vector<Message> jobs;
    for (int i = 0; i < kJobs; ++i) jobs.push_back(delayed("quorum-" + std::to_string(i), (i * 29) % 6000));
    client.publish_all(jobs);
    std::map<std::string, int> seen;
    int early = 0;
    for (const auto& r : client.drain(4000ms, 60s)) {
        const auto due = parse_rfc3339(string_header(r.message, "x-hourglass-due"));
        if (due && r.received_at < *due) ++early;
        ++seen[string_header(r.message, "x-hourglass-id")];
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(kJobs));
    EXPECT_EQ(early, 0);
    // Declaring the input queue as classic now fails: it really is a quorum queue.
    Client probe(amqp_url_);
    EXPECT_THROW(probe.connection().declare_queue(2, in_exchange(), {{"x-queue-type", std::string("classic")}}),
                 amqp::ChannelError);
    EXPECT_TRUE(eventually("SELECT count(*) FROM jobs WHERE state = 'done'", std::to_string(kJobs)));
}

}  // namespace
}  // namespace hourglass::testing
