// The ingest's series: commands received, outcomes by status, rejections by a bounded reason.
#include "ingest/ingest_metrics.hpp"

#include <gtest/gtest.h>

#include "support/prometheus_text.hpp"

namespace hourglass::ingest {
namespace {

namespace prom = hourglass::testing::prometheus;

CommandOutcome outcome(CommandStatus status, std::string error = {}) {
    return {status, std::nullopt, std::move(error)};
}

TEST(IngestMetrics, command_outcomes_count_by_status_and_rejections_by_reason) {
    metrics::Registry registry;
    IngestMetrics metrics(registry);
    metrics.count_received(5);
    metrics.count_outcomes({outcome(CommandStatus::scheduled), outcome(CommandStatus::scheduled),
                            outcome(CommandStatus::duplicate),
                            outcome(CommandStatus::rejected, "x-delay: -5 (i32) is negative"),
                            outcome(CommandStatus::rejected, "something nobody expected")});
    const auto parsed = prom::parse(registry.render_prometheus());
    EXPECT_EQ(parsed.value("hourglass_commands_received_total"), 5);
    EXPECT_EQ(parsed.value("hourglass_commands_total", {{"status", "scheduled"}}), 2);
    EXPECT_EQ(parsed.value("hourglass_commands_total", {{"status", "duplicate"}}), 1);
    EXPECT_EQ(parsed.value("hourglass_commands_total", {{"status", "rejected"}}), 2);
    EXPECT_EQ(parsed.value("hourglass_commands_total", {{"status", "cancelled"}}), 0);
    EXPECT_EQ(parsed.value("hourglass_commands_rejected_total", {{"reason", "x-delay"}}), 1);
    EXPECT_EQ(parsed.value("hourglass_commands_rejected_total", {{"reason", "other"}}), 1);
}

// Every receipt status has its series: a status added to CommandStatus without one would index
// past the counters.
TEST(IngestMetrics, every_status_has_its_series) {
    metrics::Registry registry;
    IngestMetrics metrics(registry);
    for (const auto status :
         {CommandStatus::scheduled, CommandStatus::duplicate, CommandStatus::replaced,
          CommandStatus::cancelled, CommandStatus::too_late, CommandStatus::not_found,
          CommandStatus::rejected, CommandStatus::paused, CommandStatus::resumed}) {
        metrics.count_outcomes({outcome(status)});
        const auto parsed = prom::parse(registry.render_prometheus());
        EXPECT_EQ(parsed.value("hourglass_commands_total", {{"status", std::string(to_string(status))}}), 1)
            << to_string(status);
    }
}

TEST(IngestMetrics, rejection_reasons_are_a_fixed_set_whatever_the_errors) {
    metrics::Registry registry;
    IngestMetrics metrics(registry);
    const auto series_before = prom::parse(registry.render_prometheus())
                                   .family("hourglass_commands_rejected_total")
                                   ->samples.size();
    EXPECT_EQ(series_before, rejection_reasons().size());
    std::vector<CommandOutcome> outcomes;
    for (int i = 0; i < 100; ++i) {
        outcomes.push_back(
            outcome(CommandStatus::rejected, "x-custom-" + std::to_string(i) + ": bad"));
    }
    metrics.count_outcomes(outcomes);
    const auto parsed = prom::parse(registry.render_prometheus());
    EXPECT_EQ(parsed.family("hourglass_commands_rejected_total")->samples.size(), series_before);
    EXPECT_EQ(parsed.value("hourglass_commands_rejected_total", {{"reason", "other"}}), 100);
}

}  // namespace
}  // namespace hourglass::ingest
