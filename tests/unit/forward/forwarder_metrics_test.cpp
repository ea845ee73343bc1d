// The forwarder's series: released runs published to their target, or to <prefix>.unroutable.
#include "forward/forwarder_metrics.hpp"

#include <gtest/gtest.h>

#include "support/prometheus_text.hpp"

namespace hourglass::forward {
namespace {

namespace prom = hourglass::testing::prometheus;

TEST(ForwarderMetrics, forwarded_and_unroutable_are_counted_apart) {
    metrics::Registry registry;
    ForwarderMetrics metrics(registry);
    metrics.count_forwarded(1);
    metrics.count_forwarded(1);
    metrics.count_unroutable(1);
    const auto parsed = prom::parse(registry.render_prometheus());
    EXPECT_EQ(parsed.value("hourglass_releases_forwarded_total"), 2);
    EXPECT_EQ(parsed.value("hourglass_releases_forwarded_unroutable_total"), 1);
}

}  // namespace
}  // namespace hourglass::forward
