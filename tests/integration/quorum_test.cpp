// `--queue-type quorum` (reference §10): every hourglass queue is a quorum queue, the delay queues
// dead-letter at least once, and jobs flow as with classic queues.
#include <map>
#include <sstream>

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
    EXPECT_THROW(probe.channel().declare_queue(in_exchange(), {{"x-queue-type", std::string("classic")}}),
                 amqp::ChannelError);
    EXPECT_TRUE(eventually("SELECT count(*) FROM jobs WHERE state = 'done'", std::to_string(kJobs)));
}

// A vhost whose default queue type is quorum (RabbitMQ 3.11+ `--default-queue-type`): hourglass
// declares every queue with an explicit x-queue-type, so its topology stays classic there
// unless --queue-type says otherwise (reference §10).
TEST_F(Quorum, a_quorum_default_vhost_does_not_change_the_queue_types) {
    const auto quorum_vhost_url = env_or_skip("HOURGLASS_AMQP_URL_QUORUM_VHOST");
    if (quorum_vhost_url.empty()) GTEST_SKIP() << "scripts/services did not create the vhost";
    amqp_url_ = quorum_vhost_url;
    start_hourglass({"--horizon", "4s"});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    client.publish_all({delayed("classic-in-quorum-vhost", 500)});
    const auto received = client.drain(2000ms, 20s);
    ASSERT_EQ(received.size(), 1u);
    EXPECT_EQ(string_header(received[0].message, "x-hourglass-id"), "classic-in-quorum-vhost");

    client.channel().declare_queue(prefix_ + "-probe", {});
    const auto listing = services("rabbitmqctl", "list_queues -q --no-table-headers -p "
                                                 "hourglass-quorum-default name type");
    std::map<std::string, std::string> type_of;
    std::istringstream lines(listing);
    for (std::string name, type; lines >> name >> type;) type_of[name] = type;
    int ours = 0;
    for (const auto& [name, type] : type_of) {
        if (name.rfind(prefix_ + ".", 0) != 0) continue;
        ++ours;
        EXPECT_EQ(type, "classic") << name;
    }
    EXPECT_GE(ours, 5) << "input, rejected, unroutable, audit and delay queues:\n" << listing;
    // The vhost really defaults to quorum: a queue declared without x-queue-type is one.
    const auto probe = prefix_ + "-probe";
    ASSERT_EQ(type_of.count(probe), 1u) << listing;
    EXPECT_EQ(type_of.at(probe), "quorum");
}

}  // namespace
}  // namespace hourglass::testing
