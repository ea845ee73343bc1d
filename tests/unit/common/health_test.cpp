// The service's health (src/common/health.hpp): GET /readyz is ready only with migrations
// current, the topology declared and every running component connected to both RabbitMQ and
// PostgreSQL; each connection counts for its component and peer, also in /metrics.
#include "common/health.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <list>
#include <memory>

#include "support/prometheus_text.hpp"

namespace hourglass::health {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace prom = hourglass::testing::prometheus;

// Opens every connection of the listed components, as running components would.
class HealthTest : public ::testing::Test {
protected:
    void connect(Component component, Peer peer) {
        open_.emplace_back(health_.open_connections(component, peer));
    }
    void connect_all(bool audit = true) {
        for (const auto component : kComponents) {
            if (component == Component::audit && !audit) continue;
            for (const auto peer : kPeers) {
                if (connects(component, peer)) connect(component, peer);
            }
        }
    }
    void start_up() {
        health_.set_migrations_current(true);
        health_.set_topology_declared(true);
    }
    std::shared_ptr<metrics::ServiceMetrics> metrics_ = std::make_shared<metrics::ServiceMetrics>();
    ServiceHealth health_{metrics_};
    std::list<metrics::ScopedGaugeIncrement> open_;
};

TEST_F(HealthTest, ready_when_started_and_everything_is_connected) {
    start_up();
    connect_all();
    EXPECT_EQ(health_.readiness_problem(true), std::nullopt);
}

TEST_F(HealthTest, not_ready_before_start_up_says_what_is_missing) {
    const auto problem = health_.readiness_problem(true);
    ASSERT_TRUE(problem);
    EXPECT_THAT(*problem, HasSubstr("migrations"));
    EXPECT_THAT(*problem, HasSubstr("topology"));
    EXPECT_THAT(*problem, HasSubstr("ingest to rabbitmq"));
    EXPECT_EQ(problem->find('\n'), std::string::npos) << "one short line";
}

TEST_F(HealthTest, a_lost_broker_connection_names_the_component_and_peer) {
    start_up();
    connect(Component::ingest, Peer::postgresql);
    connect(Component::loader, Peer::rabbitmq);
    connect(Component::loader, Peer::postgresql);
    connect(Component::audit, Peer::rabbitmq);
    connect(Component::audit, Peer::postgresql);
    connect(Component::forward, Peer::rabbitmq);
    const auto problem = health_.readiness_problem(true);
    ASSERT_TRUE(problem);
    EXPECT_EQ(*problem, "not ready: not connected: ingest to rabbitmq");
}

TEST_F(HealthTest, the_forwarder_needs_the_broker_only) {
    start_up();
    for (const auto component : {Component::ingest, Component::loader, Component::audit}) {
        for (const auto peer : kPeers) connect(component, peer);
    }
    EXPECT_EQ(health_.readiness_problem(true),
              std::optional<std::string>("not ready: not connected: forward to rabbitmq"));
    connect(Component::forward, Peer::rabbitmq);
    EXPECT_EQ(health_.readiness_problem(true), std::nullopt);
}

TEST_F(HealthTest, audit_is_not_required_when_turned_off) {
    start_up();
    connect_all(/*audit=*/false);
    EXPECT_EQ(health_.readiness_problem(false), std::nullopt);
    const auto problem = health_.readiness_problem(true);
    ASSERT_TRUE(problem);
    EXPECT_THAT(*problem, HasSubstr("audit to rabbitmq, audit to postgresql"));
    EXPECT_THAT(*problem, Not(HasSubstr("loader")));
}

TEST_F(HealthTest, stale_migrations_make_it_unready_again) {
    start_up();
    connect_all();
    health_.set_migrations_current(false);
    EXPECT_EQ(health_.readiness_problem(true), "not ready: database migrations not applied");
}

TEST_F(HealthTest, connections_are_tracked_per_component_and_peer_also_in_the_metrics) {
    EXPECT_FALSE(health_.connected(Component::loader, Peer::rabbitmq));
    {
        const metrics::ScopedGaugeIncrement open(
            health_.open_connections(Component::loader, Peer::rabbitmq));
        EXPECT_TRUE(health_.connected(Component::loader, Peer::rabbitmq));
        EXPECT_FALSE(health_.connected(Component::loader, Peer::postgresql));
        EXPECT_FALSE(health_.connected(Component::ingest, Peer::rabbitmq));
        const auto parsed = prom::parse(metrics_->registry().render_prometheus());
        EXPECT_EQ(
            parsed.value("hourglass_connected", {{"component", "loader"}, {"peer", "rabbitmq"}}),
            1);
        EXPECT_EQ(
            parsed.value("hourglass_connected", {{"component", "audit"}, {"peer", "postgresql"}}),
            0);
    }
    EXPECT_FALSE(health_.connected(Component::loader, Peer::rabbitmq));
}

TEST_F(HealthTest, the_forwarder_has_a_broker_connection_series_only) {
    EXPECT_EQ(health_.open_connections(Component::forward, Peer::postgresql), nullptr);
    EXPECT_FALSE(health_.connected(Component::forward, Peer::postgresql));
    const metrics::ScopedGaugeIncrement open(
        health_.open_connections(Component::forward, Peer::rabbitmq));
    const auto text = metrics_->registry().render_prometheus();
    const auto parsed = prom::parse(text);
    EXPECT_EQ(parsed.value("hourglass_connected", {{"component", "forward"}, {"peer", "rabbitmq"}}),
              1);
    EXPECT_EQ(text.find("component=\"forward\",peer=\"postgresql\""), std::string::npos);
}

TEST_F(HealthTest, start_up_facts_are_gauges_too) {
    auto parsed = prom::parse(metrics_->registry().render_prometheus());
    EXPECT_EQ(parsed.value("hourglass_migrations_current"), 0);
    EXPECT_EQ(parsed.value("hourglass_topology_declared"), 0);
    start_up();
    parsed = prom::parse(metrics_->registry().render_prometheus());
    EXPECT_EQ(parsed.value("hourglass_migrations_current"), 1);
    EXPECT_EQ(parsed.value("hourglass_topology_declared"), 1);
}

// Release probes (delay/topology.hpp): the broker releases since the first probe after the
// last silence longer than kProbeSilence, and not at all once the last probe is that old.
TEST_F(HealthTest, releasing_since_the_first_probe_after_the_last_silence) {
    const TimePoint noon{Milliseconds{1795608000000}};
    const auto at = [&](int ms) { return noon + Milliseconds{ms}; };
    EXPECT_EQ(health_.releasing_since(noon), std::nullopt) << "no probe yet";
    health_.set_probe_returned(at(123));
    EXPECT_EQ(health_.releasing_since(at(200)), at(123));
    for (int ms = 1123; ms <= 10123; ms += 1000) health_.set_probe_returned(at(ms));
    EXPECT_EQ(health_.releasing_since(at(10200)), at(123)) << "probes every second: no break";
    EXPECT_EQ(health_.releasing_since(at(10123) + kProbeSilence), at(123));
    EXPECT_EQ(health_.releasing_since(at(10124) + kProbeSilence), std::nullopt) << "silent";
    // An alarm: the probes of its minute come back all at once when it ends.
    health_.set_probe_returned(at(70000));
    health_.set_probe_returned(at(70001));
    EXPECT_EQ(health_.releasing_since(at(70500)), at(70000)) << "counted again from its end";
    const auto parsed = prom::parse(metrics_->registry().render_prometheus());
    EXPECT_DOUBLE_EQ(parsed.value("hourglass_release_probe_returned_timestamp_seconds"),
                     1795608070.001);
}

}  // namespace
}  // namespace hourglass::health
