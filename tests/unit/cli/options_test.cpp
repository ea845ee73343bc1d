// Configuration (src/cli/options.hpp): durations as operators write them, and the options each
// component receives from one ServiceOptions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <unistd.h>

#include "cli/options.hpp"

namespace hourglass::cli {
namespace {

using ::testing::HasSubstr;

// --- parse_duration -------------------------------------------------------------------------

TEST(ParseDuration, every_unit_converts_to_milliseconds) {
    EXPECT_EQ(parse_duration("250ms"), Milliseconds{250});
    EXPECT_EQ(parse_duration("60s"), Milliseconds{60000});
    EXPECT_EQ(parse_duration("5m"), Milliseconds{300000});
    EXPECT_EQ(parse_duration("2h"), Milliseconds{7200000});
    EXPECT_EQ(parse_duration("7d"), Milliseconds{604800000});
}

TEST(ParseDuration, a_bare_number_is_refused_showing_the_forms_with_a_unit) {
    for (const std::string text : {"60", "0", "1500"}) {
        SCOPED_TRACE(text);
        try {
            parse_duration(text);
            ADD_FAILURE() << "a bare number was accepted";
        } catch (const std::invalid_argument& error) {
            EXPECT_THAT(error.what(), HasSubstr("'" + text + "' has no unit: write " + text + "s"));
            EXPECT_THAT(error.what(), HasSubstr("500ms, 5s, 10m, 2h, 7d"));
        }
    }
}

TEST(ParseDuration, each_option_has_bounds_named_in_the_error) {
    EXPECT_EQ(parse_duration(kHorizonOption, "1s"), Milliseconds{1000});
    EXPECT_EQ(parse_duration(kHorizonOption, "1h"), Milliseconds{3600000});
    for (const std::string text : {"999ms", "61m", "2h"}) {
        SCOPED_TRACE(text);
        try {
            parse_duration(kHorizonOption, text);
            ADD_FAILURE() << "accepted";
        } catch (const std::invalid_argument& error) {
            EXPECT_THAT(error.what(), HasSubstr("--horizon: '" + text + "' is outside 1s to 1h"));
        }
    }
    EXPECT_THROW(parse_duration(kStopTimeoutOption, "0s"), std::invalid_argument);
    EXPECT_THROW(parse_duration(kLeaseOption, "10"), std::invalid_argument);
    ServiceOptions options;
    options.horizon = "60";
    EXPECT_THROW(options.ingest(), std::invalid_argument) << "the option structs refuse it too";
}

TEST(ParseDuration, zero_with_a_unit_is_zero) {
    EXPECT_EQ(parse_duration("0s"), Milliseconds{0});
    EXPECT_EQ(parse_duration("0d"), Milliseconds{0});
}

TEST(ParseDuration, default_max_delay_of_3650_days) {
    EXPECT_EQ(parse_duration("3650d"), Milliseconds{3650LL * 86400000LL});
}

void expect_invalid(const std::string& text) {
    SCOPED_TRACE(text);
    try {
        parse_duration(text);
        ADD_FAILURE() << "'" << text << "' was accepted";
    } catch (const std::invalid_argument& error) {
        EXPECT_THAT(error.what(), HasSubstr("'" + text + "'"));
    }
}

TEST(ParseDuration, unknown_unit_is_rejected_naming_the_value) {
    for (const std::string text : {"5x", "5sec", "5 s", "5S", "5M", "5ms5", "5us", "1w"}) {
        expect_invalid(text);
    }
}

TEST(ParseDuration, negative_is_rejected) {
    expect_invalid("-5s");
    expect_invalid("-1");
}

TEST(ParseDuration, empty_and_non_numbers_are_rejected) {
    for (const std::string text : {"", "s", "ms", " 5s", "+5s", "five", "1.5s", "0x10"}) {
        expect_invalid(text);
    }
}

TEST(ParseDuration, number_too_large_for_64_bits_is_rejected) {
    expect_invalid("99999999999999999999");
}

TEST(ParseDuration, value_that_overflows_after_the_unit_is_rejected) {
    expect_invalid("200000000000d");
    expect_invalid("9223372036854775807s");
}

// --- options for each component -------------------------------------------------------------

ServiceOptions custom_options() {
    ServiceOptions options;
    options.amqp_url = "amqps://u:p@broker:5671/prod";
    options.amqp_ca_cert = "/etc/ca.pem";
    options.pg_url = "postgresql://db/jobs";
    options.prefix = "acme";
    options.schema = "acme_jobs";
    options.queue_type = "quorum";
    options.horizon = "2m";
    options.lease = "45s";
    options.max_delay = "30d";
    options.max_body = 4096;
    options.no_audit = true;
    options.max_in_memory_runs = 30000;
    options.max_burst_runs = 5000;
    return options;
}

TEST(ServiceOptions, ingest_gets_limits_names_horizon_and_connections) {
    const auto ingest = custom_options().ingest();
    EXPECT_EQ(ingest.horizon, Milliseconds{120000});
    EXPECT_EQ(ingest.limits.max_body_bytes, 4096u);
    EXPECT_EQ(ingest.limits.max_delay, Milliseconds{30LL * 86400000LL});
    EXPECT_EQ(ingest.limits.output_exchange, "acme.out");
    EXPECT_EQ(ingest.names.prefix, "acme");
    EXPECT_EQ(ingest.names.input, "acme.in");
    EXPECT_EQ(ingest.names.rejected, "acme.rejected");
    EXPECT_EQ(ingest.amqp.url, "amqps://u:p@broker:5671/prod");
    EXPECT_EQ(ingest.amqp.ca_cert_file, "/etc/ca.pem");
    EXPECT_EQ(ingest.store.pg_url, "postgresql://db/jobs");
    EXPECT_EQ(ingest.store.schema, "acme_jobs");
}

TEST(ServiceOptions, loader_gets_horizon_lease_topology_and_a_unique_owner) {
    const auto options = custom_options();
    const auto loader = options.loader();
    EXPECT_EQ(loader.horizon, Milliseconds{120000});
    EXPECT_EQ(loader.lease, Milliseconds{45000});
    EXPECT_EQ(loader.topology.names.prefix, "acme");
    EXPECT_EQ(loader.topology.names.output, "acme.out");
    EXPECT_EQ(loader.topology.names.release, "acme.delay.released");
    EXPECT_EQ(loader.topology.queue_type, delay::QueueType::quorum);
    EXPECT_FALSE(loader.topology.audit);
    EXPECT_FALSE(loader.resend_after.has_value()) << "without the audit no run counts as lost";
    EXPECT_EQ(loader.amqp.url, options.amqp_url);
    EXPECT_EQ(loader.store.schema, "acme_jobs");
    EXPECT_EQ(loader.max_in_memory_runs, 30000u);
    EXPECT_EQ(loader.max_burst_runs, 5000u);
    EXPECT_THAT(loader.owner, HasSubstr(":" + std::to_string(getpid()) + ":"));
    EXPECT_NE(loader.owner, options.loader().owner) << "two loaders must not share a lease owner";
}

TEST(ServiceOptions, defaults_match_the_spec) {
    const ServiceOptions options;
    const auto ingest = options.ingest();
    EXPECT_EQ(ingest.horizon, Milliseconds{60000});
    EXPECT_EQ(ingest.limits.max_body_bytes, 1024u * 1024u);
    EXPECT_EQ(ingest.limits.max_delay, Milliseconds{3650LL * 86400000LL});
    EXPECT_EQ(ingest.limits.output_exchange, "hourglass.out");
    EXPECT_EQ(ingest.names.input, "hourglass.in");
    EXPECT_FALSE(ingest.limits.allow_exchange) << "no other exchange by default";
    EXPECT_EQ(ingest.store.schema, "hourglass");
    const auto loader = options.loader();
    EXPECT_EQ(loader.horizon, Milliseconds{60000});
    EXPECT_EQ(loader.lease, Milliseconds{30000});
    EXPECT_EQ(loader.topology.queue_type, delay::QueueType::classic);
    EXPECT_TRUE(loader.topology.audit);
    EXPECT_EQ(loader.resend_after, Milliseconds{60000});
    EXPECT_EQ(loader.max_in_memory_runs, 30000u) << "a 5 s horizon carries a 100,000 hotspot";
    EXPECT_EQ(loader.max_burst_runs, 20000u) << "bursts published past the delay queues";
    EXPECT_EQ(loader.realtime_publisher, RealtimeMode::automatic)
        << "the publisher asks for real-time scheduling unless told not to";
    EXPECT_EQ(loader.slow_confirm, Milliseconds{20}) << "runs held for the near rung while the broker is slow";
}

TEST(ServiceOptions, slow_confirm_takes_a_duration_within_its_bounds_or_off) {
    ServiceOptions options;
    options.slow_confirm = "50ms";
    EXPECT_EQ(options.loader().slow_confirm, Milliseconds{50});
    options.slow_confirm = "off";
    EXPECT_FALSE(options.loader().slow_confirm.has_value()) << "every run handed over a horizon ahead";
    EXPECT_NO_THROW(options.validate_durations());
    for (const auto* bad : {"0ms", "2m", "soon"}) {
        options.slow_confirm = bad;
        EXPECT_THROW(options.loader(), std::invalid_argument) << bad;
        EXPECT_THROW(options.validate_durations(), std::invalid_argument) << bad;
    }
}

// The audit records a burst once its copies stop coming, at most 10 s after the first, and
// never so late that the loader would take its runs for lost (--resend-after).
TEST(ServiceOptions, the_audit_records_a_burst_within_half_of_resend_after) {
    ServiceOptions options;
    EXPECT_EQ(options.audit().burst_hold, Milliseconds{10000});
    EXPECT_EQ(options.audit().burst_quiet, Milliseconds{2000});
    options.resend_after = "4s";
    EXPECT_EQ(options.audit().burst_hold, Milliseconds{2000});
    options.resend_after = "1s";  // the shortest allowed
    EXPECT_EQ(options.audit().burst_hold, Milliseconds{500});
}

TEST(ServiceOptions, schema_does_not_follow_the_prefix) {
    ServiceOptions options;
    options.prefix = "acme";
    EXPECT_EQ(options.store().schema, "hourglass");
    EXPECT_EQ(options.ingest().store.schema, "hourglass");
}

TEST(ServiceOptions, audit_and_topology_use_the_prefix) {
    const auto options = custom_options();
    EXPECT_EQ(options.audit().names.audit, "acme.delay.audit");
    EXPECT_EQ(options.audit().store.pg_url, "postgresql://db/jobs");
    EXPECT_EQ(options.topology().names.unroutable, "acme.unroutable");
    EXPECT_FALSE(options.topology().audit);
}

TEST(ServiceOptions, allow_exchange_matches_whole_names_only) {
    ServiceOptions options;
    options.allow_exchange = "legacy\\.[a-z]+";
    const auto allow = options.ingest().limits.allow_exchange;
    ASSERT_TRUE(static_cast<bool>(allow));
    EXPECT_TRUE(allow("legacy.orders"));
    EXPECT_FALSE(allow("legacy.orders.x1")) << "a prefix match is not enough";
    EXPECT_FALSE(allow("my.legacy.orders"));
}

TEST(ServiceOptions, invalid_allow_exchange_is_an_error_naming_it) {
    ServiceOptions options;
    options.allow_exchange = "legacy.(";
    try {
        options.ingest();
        ADD_FAILURE() << "an invalid expression was accepted";
    } catch (const std::invalid_argument& error) {
        EXPECT_THAT(error.what(), HasSubstr("--allow-exchange 'legacy.('"));
    }
}

TEST(ServiceOptions, bad_durations_surface_as_invalid_argument) {
    ServiceOptions options;
    options.horizon = "soon";
    EXPECT_THROW(options.ingest(), std::invalid_argument);
    EXPECT_THROW(options.loader(), std::invalid_argument);
    options.horizon = "60s";
    options.max_delay = "-1d";
    EXPECT_THROW(options.ingest(), std::invalid_argument);
    options.max_delay = "1d";
    options.lease = "30 s";
    EXPECT_THROW(options.loader(), std::invalid_argument);
    options.lease = "30s";
    options.resend_after = "later";
    EXPECT_THROW(options.loader(), std::invalid_argument);
}

}  // namespace
}  // namespace hourglass::cli
