// The audit's series: releases observed and their lateness, given in ms, kept in seconds.
#include "audit/audit_metrics.hpp"

#include <gtest/gtest.h>

#include "support/prometheus_text.hpp"

namespace hourglass::audit {
namespace {

namespace prom = hourglass::testing::prometheus;

// Two copies recorded three releases: one copy's run was the last of a group of two.
TEST(AuditMetrics, releases_feed_the_lateness_histogram_in_seconds) {
    metrics::Registry registry;
    AuditMetrics metrics(registry);
    metrics.count_releases(2, {0.4, 3.0, 1500.0});
    const auto parsed = prom::parse(registry.render_prometheus());
    EXPECT_EQ(parsed.value("hourglass_release_copies_total"), 2);
    EXPECT_EQ(parsed.value("hourglass_releases_observed_total"), 3);
    EXPECT_EQ(parsed.value("hourglass_release_lateness_seconds_bucket", {{"le", "0.001"}}), 1);
    EXPECT_EQ(parsed.value("hourglass_release_lateness_seconds_bucket", {{"le", "0.005"}}), 2);
    EXPECT_EQ(parsed.value("hourglass_release_lateness_seconds_bucket", {{"le", "1"}}), 2);
    EXPECT_EQ(parsed.value("hourglass_release_lateness_seconds_count"), 3);
    EXPECT_DOUBLE_EQ(parsed.value("hourglass_release_lateness_seconds_sum"), 1.5034);
}

}  // namespace
}  // namespace hourglass::audit
