// Metrics (src/common/metrics.hpp): the registry renders the Prometheus text format that
// a strict parser (and promtool, when installed) accepts, label values are escaped, counts are
// exact under concurrent updates, and the hourglass metrics move as the pipeline reports.
#include "common/metrics.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "audit/audit_metrics.hpp"
#include "common/health.hpp"
#include "forward/forwarder_metrics.hpp"
#include "ingest/ingest_metrics.hpp"
#include "loader/loader_metrics.hpp"
#include "support/prometheus_text.hpp"

namespace hourglass::metrics {
namespace {

using ::testing::HasSubstr;
namespace prom = hourglass::testing::prometheus;

void expect_promtool_accepts(const std::string& text) {
    const auto complaint = prom::promtool_complaint(text);
    EXPECT_FALSE(complaint) << *complaint;
}

TEST(Registry, renders_help_type_and_samples_in_registration_order) {
    Registry registry;
    registry.add_counter("demo_requests_total", "Requests.").increment(3);
    registry.add_gauge("demo_temperature", "Degrees.").set(-2.5);
    const auto text = registry.render_prometheus();
    EXPECT_EQ(text,
              "# HELP demo_requests_total Requests.\n"
              "# TYPE demo_requests_total counter\n"
              "demo_requests_total 3\n"
              "# HELP demo_temperature Degrees.\n"
              "# TYPE demo_temperature gauge\n"
              "demo_temperature -2.5\n");
    EXPECT_NO_THROW(prom::parse(text));
}

TEST(Registry, series_of_one_name_share_one_help_and_type) {
    Registry registry;
    registry.add_counter("demo_total", "Things.", {{"kind", "a"}}).increment();
    registry.add_counter("demo_total", "Things.", {{"kind", "b"}}).increment(2);
    const auto parsed = prom::parse(registry.render_prometheus());
    ASSERT_EQ(parsed.families.size(), 1u);
    EXPECT_EQ(parsed.value("demo_total", {{"kind", "a"}}), 1);
    EXPECT_EQ(parsed.value("demo_total", {{"kind", "b"}}), 2);
}

TEST(Registry, label_values_and_help_are_escaped) {
    Registry registry;
    const std::string awkward = "back\\slash \"quoted\"\nnew line";
    registry.add_gauge("demo_info", "Help with \\ and\na newline.", {{"value", awkward}}).set(1);
    const auto text = registry.render_prometheus();
    EXPECT_THAT(text, HasSubstr(R"(value="back\\slash \"quoted\"\nnew line")"));
    EXPECT_THAT(text, HasSubstr("# HELP demo_info Help with \\\\ and\\na newline.\n"));
    const auto parsed = prom::parse(text);
    EXPECT_EQ(parsed.value("demo_info", {{"value", awkward}}), 1);
    EXPECT_EQ(parsed.family("demo_info")->help, "Help with \\ and\na newline.");
}

TEST(Registry, special_gauge_values_use_the_format_spelling) {
    Registry registry;
    registry.add_gauge("demo_nan", "x").set(std::nan(""));
    registry.add_gauge("demo_inf", "x").set(INFINITY);
    registry.add_gauge("demo_minus_inf", "x").set(-INFINITY);
    const auto text = registry.render_prometheus();
    EXPECT_THAT(text, HasSubstr("demo_nan NaN\n"));
    EXPECT_THAT(text, HasSubstr("demo_inf +Inf\n"));
    EXPECT_THAT(text, HasSubstr("demo_minus_inf -Inf\n"));
    EXPECT_NO_THROW(prom::parse(text));
}

TEST(Registry, histogram_buckets_are_cumulative_with_inf_sum_and_count) {
    Registry registry;
    auto& histogram = registry.add_histogram("demo_seconds", "Durations.", {0.001, 0.01, 0.1});
    for (const double value : {0.0005, 0.001, 0.005, 0.05, 0.5, 7.0}) histogram.observe(value);
    histogram.observe(std::nan(""));  // ignored
    const auto text = registry.render_prometheus();
    const auto parsed = prom::parse(text);
    EXPECT_EQ(parsed.value("demo_seconds_bucket", {{"le", "0.001"}}), 2) << "le is inclusive";
    EXPECT_EQ(parsed.value("demo_seconds_bucket", {{"le", "0.01"}}), 3);
    EXPECT_EQ(parsed.value("demo_seconds_bucket", {{"le", "0.1"}}), 4);
    EXPECT_EQ(parsed.value("demo_seconds_bucket", {{"le", "+Inf"}}), 6);
    EXPECT_EQ(parsed.value("demo_seconds_count"), 6);
    EXPECT_DOUBLE_EQ(parsed.value("demo_seconds_sum"), 0.0005 + 0.001 + 0.005 + 0.05 + 0.5 + 7.0);
    expect_promtool_accepts(text);
}

TEST(Registry, invalid_names_labels_and_duplicates_are_refused) {
    Registry registry;
    EXPECT_THROW(registry.add_counter("1bad", "x"), std::invalid_argument);
    EXPECT_THROW(registry.add_counter("bad-name", "x"), std::invalid_argument);
    EXPECT_THROW(registry.add_counter("ok_total", "x", {{"bad-label", "v"}}),
                 std::invalid_argument);
    EXPECT_THROW(registry.add_counter("ok_total", "x", {{"__reserved", "v"}}),
                 std::invalid_argument);
    EXPECT_THROW(registry.add_counter("ok_total", "x", {{"a", "1"}, {"a", "2"}}),
                 std::invalid_argument);
    EXPECT_THROW(registry.add_histogram("h", "x", {1}, {{"le", "1"}}), std::invalid_argument);
    EXPECT_THROW(registry.add_histogram("h", "x", {2, 1}), std::invalid_argument);
    registry.add_counter("ok_total", "x", {{"a", "1"}});
    EXPECT_THROW(registry.add_counter("ok_total", "x", {{"a", "1"}}), std::invalid_argument);
    EXPECT_THROW(registry.add_gauge("ok_total", "x", {{"a", "2"}}), std::invalid_argument);
    EXPECT_THROW(registry.add_counter("ok_total", "other help", {{"a", "2"}}),
                 std::invalid_argument);
    // Nothing half-registered is rendered.
    EXPECT_EQ(prom::parse(registry.render_prometheus()).families.size(), 1u);
}

TEST(Registry, concurrent_updates_are_all_counted) {
    Registry registry;
    auto& counter = registry.add_counter("demo_total", "x");
    auto& gauge = registry.add_gauge("demo_open", "x");
    auto& histogram = registry.add_histogram("demo_seconds", "x", {0.5});
    constexpr int kThreads = 4;
    constexpr int kPerThread = 50000;
    {
        std::vector<std::jthread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&] {
                for (int i = 0; i < kPerThread; ++i) {
                    counter.increment();
                    gauge.add(1);
                    histogram.observe(1.0);
                    if (i % 500 == 0) prom::parse(registry.render_prometheus());  // never torn
                }
            });
        }
    }
    const auto parsed = prom::parse(registry.render_prometheus());
    EXPECT_EQ(parsed.value("demo_total"), kThreads * kPerThread);
    EXPECT_EQ(parsed.value("demo_open"), kThreads * kPerThread);
    EXPECT_EQ(parsed.value("demo_seconds_count"), kThreads * kPerThread);
    EXPECT_EQ(parsed.value("demo_seconds_sum"), kThreads * kPerThread);
}

TEST(ScopedGaugeIncrement, counts_while_alive_and_moves_its_count) {
    Gauge gauge;
    {
        ScopedGaugeIncrement first(&gauge);
        EXPECT_EQ(gauge.value(), 1);
        ScopedGaugeIncrement moved(std::move(first));
        EXPECT_EQ(gauge.value(), 1);
        ScopedGaugeIncrement assigned;
        assigned = std::move(moved);
        EXPECT_EQ(gauge.value(), 1);
    }
    EXPECT_EQ(gauge.value(), 0);
    ScopedGaugeIncrement none(nullptr);  // no gauge: nothing to count
}

// --- the hourglass metrics ---------------------------------------------------------------------

TEST(ServiceMetrics, every_component_in_one_registry_renders_valid_prefixed_exposition) {
    const auto service_metrics = std::make_shared<ServiceMetrics>();
    auto& metrics = *service_metrics;
    const health::ServiceHealth health(service_metrics);
    const ingest::IngestMetrics ingest_metrics(metrics.registry());
    const loader::LoaderMetrics loader_metrics(metrics.registry());
    const audit::AuditMetrics audit_metrics(metrics.registry());
    const forward::ForwarderMetrics forwarder_metrics(metrics.registry());
    const auto text = metrics.registry().render_prometheus();
    const auto parsed = prom::parse(text);
    for (const auto* name : {"hourglass_build_info", "hourglass_connected",
                             "hourglass_commands_total", "hourglass_runs_enqueued_total",
                             "hourglass_release_lateness_seconds",
                             "hourglass_releases_forwarded_total"}) {
        EXPECT_NE(parsed.family(name), nullptr) << name;
    }
    for (const auto& family : parsed.families) {
        EXPECT_TRUE(family.name.starts_with("hourglass_")) << family.name;
        EXPECT_EQ(family.type == "counter", family.name.ends_with("_total")) << family.name;
    }
    expect_promtool_accepts(text);
}

TEST(ServiceMetrics, a_component_registered_twice_on_one_registry_is_refused) {
    ServiceMetrics metrics;
    const loader::LoaderMetrics loader_metrics(metrics.registry());
    EXPECT_THROW(loader::LoaderMetrics{metrics.registry()}, std::invalid_argument);
}

}  // namespace
}  // namespace hourglass::metrics
