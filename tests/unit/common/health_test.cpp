// GET /readyz (src/http/readiness.hpp): ready only with migrations current, the topology
// declared and every running component connected to both RabbitMQ and PostgreSQL.
#include "http/readiness.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <list>

namespace hourglass::http {
namespace {

using metrics::Component;
using metrics::Peer;
using ::testing::HasSubstr;
using ::testing::Not;

// Opens every connection of the listed components, as running components would.
class ReadinessTest : public ::testing::Test {
protected:
    void connect(Component component, Peer peer) {
        open_.emplace_back(metrics_.open_connections(component, peer));
    }
    void connect_all(bool audit = true) {
        for (const auto component : metrics::kComponents) {
            if (component == Component::audit && !audit) continue;
            for (const auto peer : metrics::kPeers) {
                if (metrics::connects(component, peer)) connect(component, peer);
            }
        }
    }
    void start_up() {
        metrics_.set_migrations_current(true);
        metrics_.set_topology_declared(true);
    }
    metrics::ServiceMetrics metrics_;
    std::list<metrics::ScopedGaugeIncrement> open_;
};

TEST_F(ReadinessTest, ready_when_started_and_everything_is_connected) {
    start_up();
    connect_all();
    EXPECT_EQ(readiness_problem(metrics_, true), std::nullopt);
}

TEST_F(ReadinessTest, not_ready_before_start_up_says_what_is_missing) {
    const auto problem = readiness_problem(metrics_, true);
    ASSERT_TRUE(problem);
    EXPECT_THAT(*problem, HasSubstr("migrations"));
    EXPECT_THAT(*problem, HasSubstr("topology"));
    EXPECT_THAT(*problem, HasSubstr("ingest to rabbitmq"));
    EXPECT_EQ(problem->find('\n'), std::string::npos) << "one short line";
}

TEST_F(ReadinessTest, a_lost_broker_connection_names_the_component_and_peer) {
    start_up();
    connect(Component::ingest, Peer::postgresql);
    connect(Component::loader, Peer::rabbitmq);
    connect(Component::loader, Peer::postgresql);
    connect(Component::audit, Peer::rabbitmq);
    connect(Component::audit, Peer::postgresql);
    connect(Component::forward, Peer::rabbitmq);
    const auto problem = readiness_problem(metrics_, true);
    ASSERT_TRUE(problem);
    EXPECT_EQ(*problem, "not ready: not connected: ingest to rabbitmq");
}

TEST_F(ReadinessTest, the_forwarder_needs_the_broker_only) {
    start_up();
    for (const auto component : {Component::ingest, Component::loader, Component::audit}) {
        for (const auto peer : metrics::kPeers) connect(component, peer);
    }
    EXPECT_EQ(readiness_problem(metrics_, true),
              std::optional<std::string>("not ready: not connected: forward to rabbitmq"));
    connect(Component::forward, Peer::rabbitmq);
    EXPECT_EQ(readiness_problem(metrics_, true), std::nullopt);
}

TEST_F(ReadinessTest, audit_is_not_required_when_turned_off) {
    start_up();
    connect_all(/*audit=*/false);
    EXPECT_EQ(readiness_problem(metrics_, false), std::nullopt);
    const auto problem = readiness_problem(metrics_, true);
    ASSERT_TRUE(problem);
    EXPECT_THAT(*problem, HasSubstr("audit to rabbitmq, audit to postgresql"));
    EXPECT_THAT(*problem, Not(HasSubstr("loader")));
}

TEST_F(ReadinessTest, stale_migrations_make_it_unready_again) {
    start_up();
    connect_all();
    metrics_.set_migrations_current(false);
    EXPECT_EQ(readiness_problem(metrics_, true), "not ready: database migrations not applied");
}

}  // namespace
}  // namespace hourglass::http
