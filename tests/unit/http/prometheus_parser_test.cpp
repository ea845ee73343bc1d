// The strict Prometheus text parser used by the /metrics tests (tests/support/prometheus_text.hpp)
// must itself refuse what Prometheus would refuse, or those tests prove nothing.
#include <gtest/gtest.h>

#include "support/prometheus_text.hpp"

namespace hourglass::testing::prometheus {
namespace {

const std::string kGood =
    "# HELP a_total Things.\n# TYPE a_total counter\na_total{k=\"v\"} 1\n"
    "# HELP h Hist.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum "
    "3.5\nh_count 2\n";

TEST(PrometheusParser, accepts_a_well_formed_exposition) {
    const auto parsed = parse(kGood);
    EXPECT_EQ(parsed.value("a_total", {{"k", "v"}}), 1);
    EXPECT_EQ(parsed.value("h_count"), 2);
}

TEST(PrometheusParser, refuses_every_malformation) {
    const std::vector<std::pair<const char*, std::string>> bad = {
        {"no final newline", "# TYPE a gauge\na 1"},
        {"sample without TYPE", "a 1\n"},
        {"sample of another family", "# TYPE a gauge\nb 1\n"},
        {"TYPE after samples", "# TYPE a gauge\na 1\n# TYPE a gauge\n"},
        {"unknown type", "# TYPE a meter\na 1\n"},
        {"family split in two",
         "# TYPE a gauge\na{x=\"1\"} 1\n# TYPE b gauge\nb 1\na{x=\"2\"} 1\n"},
        {"repeated series", "# TYPE a gauge\na 1\na 2\n"},
        {"unquoted label", "# TYPE a gauge\na{x=1} 1\n"},
        {"unknown escape", "# TYPE a gauge\na{x=\"\\t\"} 1\n"},
        {"trailing comma", "# TYPE a gauge\na{x=\"1\",} 1\n"},
        {"repeated label", "# TYPE a gauge\na{x=\"1\",x=\"2\"} 1\n"},
        {"bad value", "# TYPE a gauge\na one\n"},
        {"two spaces", "# TYPE a gauge\na  1\n"},
        {"blank line", "# TYPE a gauge\n\na 1\n"},
        {"stray comment", "# TYPE a gauge\n# hello\na 1\n"},
        {"negative counter", "# TYPE a_total counter\na_total -1\n"},
        {"bad metric name", "# TYPE 1a gauge\n1a 1\n"},
        {"histogram without +Inf",
         "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n"},
        {"histogram count mismatch",
         "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n"},
        {"histogram decreasing",
         "# TYPE h histogram\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n"},
        {"histogram without sum", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 2\n"},
    };
    for (const auto& [what, text] : bad) {
        EXPECT_THROW(parse(text), std::runtime_error) << what;
    }
}

}  // namespace
}  // namespace hourglass::testing::prometheus
