// A 3-node RabbitMQ cluster (scripts/services with HOURGLASS_SERVICES_CLUSTER=3, started by the
// test in its own directory) with every hourglass queue a quorum queue: stopping the node
// hourglass is connected to, under load, loses no job: hourglass moves on to the next URL of its
// list (docs/operating.md "Clustering"). debian12 only; about a minute.
#include <gmock/gmock.h>
#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;

// A private RabbitMQ cluster, always stopped and deleted at the end.
class ClusterServices {
public:
    explicit ClusterServices(int nodes) {
        char dir_template[] = "/tmp/hourglass-cluster.XXXXXX";
        const char* made = mkdtemp(dir_template);
        if (made == nullptr) throw std::runtime_error("mkdtemp failed");
        dir_ = made;
        std::system(("chmod 755 '" + dir_ + "'").c_str());
        // Node K uses these + K - 1; ports the OS just handed out are free, and so, almost
        // always, are their neighbours (a taken one fails the start with a clear message).
        for (int attempt = 0; attempt < 2 && !started_; ++attempt) {
            const auto command =
                "HOURGLASS_SERVICES_CLUSTER=" + std::to_string(nodes) +
                " HOURGLASS_SERVICES_FLAVOUR=debian12 HOURGLASS_RABBIT_MGMT=0" +
                " HOURGLASS_RABBIT_PORT=" + std::to_string(free_local_port()) +
                " HOURGLASS_RABBIT_TLS_PORT=" + std::to_string(free_local_port()) +
                " HOURGLASS_RABBIT_DIST_PORT=" + std::to_string(free_local_port()) +
                " HOURGLASS_RABBIT_EPMD_PORT=" + std::to_string(free_local_port()) +
                // Unused (no management plugin), but derived ports must stay below 65536.
                " HOURGLASS_RABBIT_MGMT_PORT=" + std::to_string(free_local_port()) + " " +
                services_script() + " start-rabbit '" + dir_ + "' >'" + dir_ + "/start.log' 2>&1";
            started_ = std::system(command.c_str()) == 0;
            if (!started_) run("stop-rabbit");
        }
    }
    ~ClusterServices() {
        run("stop-rabbit");
        std::system(("rm -rf '" + dir_ + "'").c_str());
    }
    bool started() const { return started_; }
    std::string start_log() const { return read_all(dir_ + "/start.log"); }
    // A value of DIR/env.
    std::string env(const std::string& key) const {
        std::ifstream in(dir_ + "/env");
        for (std::string line; std::getline(in, line);) {
            if (line.starts_with(key + "=")) return line.substr(key.size() + 1);
        }
        return {};
    }
    bool run(const std::string& action) const {
        const auto command =
            services_script() + " " + action + " '" + dir_ + "' >>'" + dir_ + "/actions.log' 2>&1";
        return std::system(command.c_str()) == 0;
    }
    // Runs a command and returns its standard output.
    std::string output(const std::string& action) const {
        const auto out = dir_ + "/output.txt";
        const auto command =
            services_script() + " " + action + " >'" + out + "' 2>>'" + dir_ + "/actions.log'";
        std::system(command.c_str());
        return read_all(out);
    }
    const std::string& dir() const { return dir_; }
    bool run(const std::string& action, int node) const {
        const auto command = services_script() + " " + action + " '" + dir_ + "' " +
                             std::to_string(node) + " >>'" + dir_ + "/actions.log' 2>&1";
        return std::system(command.c_str()) == 0;
    }

private:
    std::string dir_;
    bool started_ = false;
};

class Cluster : public HourglassTest {};

TEST_F(Cluster, quorum_queues_lose_nothing_when_a_node_stops_under_load) {
    if (env_or_skip("HOURGLASS_SERVICES_FLAVOUR") == "forky") {
        GTEST_SKIP() << "the cluster of scripts/services runs the debian12 flavour only";
    }
    ClusterServices cluster(3);
    ASSERT_TRUE(cluster.started()) << cluster.start_log();
    const auto node1 = cluster.env("HOURGLASS_AMQP_URL_NODE1");
    ASSERT_FALSE(node1.empty()) << cluster.start_log();

    // hourglass starts on node 3 (the first URL of its list), which the test stops; the
    // application uses node 2.
    amqp_url_ = cluster.env("HOURGLASS_AMQP_URL_NODE3") + " " + node1 + " " +
                cluster.env("HOURGLASS_AMQP_URL_NODE2");
    auto& process = start_hourglass({"--queue-type", "quorum", "--horizon", "10s"});
    // Leaders start on the node that declared the queues (node 1): spread them, so that the
    // stopped node leads some queues and they must elect new leaders under load.
    cluster.output("rabbitmq-queues '" + cluster.dir() + "' rebalance quorum");
    const auto leaders = cluster.output("rabbitmqctl '" + cluster.dir() +
                                        "' -q list_queues name leader --no-table-headers");
    const auto node3 = cluster.env("HOURGLASS_AMQP_URL_NODE3");
    const auto node3_port = node3.substr(node3.rfind(':') + 1, node3.rfind('/') - node3.rfind(':') - 1);
    int led_by_node3 = 0;
    for (std::size_t at = leaders.find("@localhost"); at != std::string::npos;
         at = leaders.find("@localhost", at + 1)) {
        if (leaders.compare(at - node3_port.size(), node3_port.size(), node3_port) == 0) ++led_by_node3;
    }
    EXPECT_GT(led_by_node3, 0) << leaders;
    Client client(cluster.env("HOURGLASS_AMQP_URL_NODE2"));
    client.subscribe(out_exchange(), "#");

    // 400 jobs due over 1..9 s, published in 4 waves; node 3 stops after the second wave, so
    // the last two reach hourglass only through its new connection.
    constexpr int kJobs = 400;
    for (int wave = 0; wave < 4; ++wave) {
        std::vector<Message> jobs;
        for (int i = wave * kJobs / 4; i < (wave + 1) * kJobs / 4; ++i) {
            jobs.push_back(delayed("c-" + std::to_string(i), 1000 + (i * 8000) / kJobs));
        }
        client.publish_all(jobs);
        if (wave == 1) {
            ASSERT_TRUE(cluster.run("stop-rabbit-node", 3));
        }
    }

    std::map<std::string, int> seen;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (seen.size() < static_cast<std::size_t>(kJobs) &&
           std::chrono::steady_clock::now() < deadline) {
        if (auto received = client.receive(1s)) {
            ++seen[string_header(received->message, "x-hourglass-id")];
        }
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(kJobs)) << "lost jobs\n" << process.log_tail();
    EXPECT_TRUE(eventually("SELECT count(*) FROM jobs WHERE state = 'done'", std::to_string(kJobs),
                           30s));
    EXPECT_THAT(process.log_tail(2000), ::testing::HasSubstr("connected to RabbitMQ"));
    EXPECT_EQ(process.terminate(), 0);
}

}  // namespace
}  // namespace hourglass::testing
