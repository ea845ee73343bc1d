// The loader's series: hand-overs, re-sends, hand-over lateness (µs in, seconds out), publishes
// awaiting a confirm, and the clock offset to PostgreSQL.
#include "loader/loader_metrics.hpp"

#include <gtest/gtest.h>

#include "support/prometheus_text.hpp"

namespace hourglass::loader {
namespace {

namespace prom = hourglass::testing::prometheus;
using std::chrono::microseconds;

TEST(LoaderMetrics, handover_lateness_is_a_histogram_in_seconds_with_microsecond_input) {
    metrics::Registry registry;
    LoaderMetrics metrics(registry);
    metrics.observe_handover_lateness(microseconds{300});
    metrics.observe_handover_lateness(microseconds{3000});
    metrics.observe_handover_lateness(microseconds{2000000});
    const auto parsed = prom::parse(registry.render_prometheus());
    EXPECT_EQ(parsed.value("hourglass_handover_lateness_seconds_bucket", {{"le", "0.001"}}), 1);
    EXPECT_EQ(parsed.value("hourglass_handover_lateness_seconds_bucket", {{"le", "0.005"}}), 2);
    EXPECT_EQ(parsed.value("hourglass_handover_lateness_seconds_bucket", {{"le", "1"}}), 2);
    EXPECT_EQ(parsed.value("hourglass_handover_lateness_seconds_count"), 3);
    EXPECT_DOUBLE_EQ(parsed.value("hourglass_handover_lateness_seconds_sum"), 2.0033);
}

TEST(LoaderMetrics, counters_and_gauges) {
    metrics::Registry registry;
    LoaderMetrics metrics(registry);
    metrics.count_runs_enqueued(4);
    metrics.count_runs_enqueued(3);
    metrics.count_runs_resent(2);
    metrics.set_unconfirmed_publishes(12);
    metrics.set_clock_offset(microseconds{-1500});
    const auto parsed = prom::parse(registry.render_prometheus());
    EXPECT_EQ(parsed.value("hourglass_runs_enqueued_total"), 7);
    EXPECT_EQ(parsed.value("hourglass_runs_resent_total"), 2);
    EXPECT_EQ(parsed.value("hourglass_unconfirmed_publishes"), 12);
    EXPECT_DOUBLE_EQ(parsed.value("hourglass_clock_offset_seconds"), -0.0015);
}

}  // namespace
}  // namespace hourglass::loader
