#include "cli/options.hpp"

#include "common/mask.hpp"
#include "cron/recurrence.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <stdexcept>
#include <unistd.h>

namespace hourglass::cli {

namespace {
std::string format_duration(Milliseconds duration) {
    static const std::pair<const char*, std::int64_t> kUnits[] = {
        {"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}};
    for (const auto& [name, factor] : kUnits) {
        if (duration.count() % factor == 0 && duration.count() >= factor) {
            return std::to_string(duration.count() / factor) + name;
        }
    }
    return std::to_string(duration.count()) + "ms";
}
}  // namespace

Milliseconds parse_duration(const DurationOption& option, const std::string& text) {
    Milliseconds value{};
    try {
        value = parse_duration(text);
    } catch (const std::invalid_argument& error) {
        throw std::invalid_argument(std::string(option.flag) + ": " + error.what());
    }
    if (value < option.min || value > option.max) {
        throw std::invalid_argument(std::string(option.flag) + ": '" + text + "' is outside " +
                                    format_duration(option.min) + " to " +
                                    format_duration(option.max));
    }
    return value;
}

std::function<bool(std::string_view)> compile_allow_exchange(const std::string& expression) {
    if (expression.empty()) return {};
    // RE2 matches in time linear in the name and without recursion, whatever the expression
    // (std::regex overflowed the stack on a 60 KB name).
    re2::RE2::Options re2_options;
    re2_options.set_log_errors(false);
    auto compiled = std::make_shared<const re2::RE2>(expression, re2_options);
    if (!compiled->ok()) {
        throw std::invalid_argument("--allow-exchange '" + expression +
                                    "' is not a valid regular expression: " + compiled->error());
    }
    // FullMatch: the expression must match the whole exchange name.
    return [compiled](std::string_view name) {
        return re2::RE2::FullMatch(re2::StringPiece(name.data(), name.size()), *compiled);
    };
}

amqp::ConnectionOptions ServiceOptions::amqp() const {
    amqp::ConnectionOptions options;
    options.url = amqp_url;
    options.ca_cert_file = amqp_ca_cert;
    options.client_cert_file = amqp_cert;
    options.client_key_file = amqp_key;
    return options;
}

store::StoreOptions ServiceOptions::store() const { return {pg_url, schema}; }

delay::TopologyOptions ServiceOptions::topology() const {
    delay::TopologyOptions options;
    options.names = delay::TopologyNames(prefix);
    options.queue_type = queue_type == "quorum" ? delay::QueueType::quorum : delay::QueueType::classic;
    options.audit = !no_audit;
    options.delay_lanes = delay_lanes;
    // Only an instance that accepts targets needs the forward ladder at once; the loader of any
    // other declares it if it ever claims a targeted run (src/delay/topology.hpp).
    options.forward_ladder = !allow_exchange.empty();
    return options;
}

ingest::IngestOptions ServiceOptions::ingest() const {
    ingest::IngestOptions options;
    options.amqp = amqp();
    options.store = store();
    options.names = delay::TopologyNames(prefix);
    options.limits.max_body_bytes = max_body;
    options.limits.max_delay = parse_duration(kMaxDelayOption, max_delay);
    options.limits.output_exchange = options.names.output;
    options.limits.allow_exchange = compile_allow_exchange(allow_exchange);
    options.limits.first_cron_run = cron::first_run;
    options.limits.owners = {.owner_only = command_scope == "owner",
                             .default_owner = amqp_default_owner,
                             .operators = operators};
    options.horizon = parse_duration(kHorizonOption, horizon);
    return options;
}

loader::LoaderOptions ServiceOptions::loader() const {
    loader::LoaderOptions options;
    options.amqp = amqp();
    options.store = store();
    options.topology = topology();
    options.horizon = parse_duration(kHorizonOption, horizon);
    options.lease = parse_duration(kLeaseOption, lease);
    options.max_clock_offset = parse_duration(kMaxClockOffsetOption, max_clock_offset);
    options.max_unconfirmed = max_unconfirmed;
    options.slow_confirm = slow_confirm == "off" ? std::nullopt
                                                 : std::optional{parse_duration(kSlowConfirmOption, slow_confirm)};
    options.max_in_memory_runs = max_in_memory_runs;
    options.max_burst_runs = max_burst_runs;
    options.realtime_publisher = parse_realtime_mode(realtime_publisher);
    // Only the audit tells a lost run from a released one.
    options.releases_observed = !no_audit;
    if (!no_audit) options.resend_after = parse_duration(kResendAfterOption, resend_after);
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    options.owner = std::string(host) + ":" + std::to_string(getpid()) + ":" +
                    generate_uuid().substr(0, 8);
    return options;
}

void ServiceOptions::validate_durations() const {
    parse_duration(kHorizonOption, horizon);
    parse_duration(kLeaseOption, lease);
    parse_duration(kResendAfterOption, resend_after);
    parse_duration(kMaxDelayOption, max_delay);
    parse_duration(kStopTimeoutOption, stop_timeout);
    parse_duration(kMaxClockOffsetOption, max_clock_offset);
    if (retention != "off") parse_duration(kRetentionOption, retention);
    if (slow_confirm != "off") parse_duration(kSlowConfirmOption, slow_confirm);
}

std::optional<retention::RetentionOptions> ServiceOptions::retention_options() const {
    if (retention == "off") return std::nullopt;
    retention::RetentionOptions options;
    options.store = store();
    options.retention = parse_duration(kRetentionOption, retention);
    return options;
}

Milliseconds ServiceOptions::stop_timeout_ms() const {
    return parse_duration(kStopTimeoutOption, stop_timeout);
}

std::optional<http::ListenAddress> ServiceOptions::http_address() const {
    if (http.empty() || http == "off") return std::nullopt;
    return http::parse_listen_address(http);
}

std::vector<std::string> ServiceOptions::secrets() const {
    std::vector<std::string> secrets;
    for (const auto& url : amqp::split_urls(amqp_url)) {
        for (auto& secret : secrets_in(url)) secrets.push_back(std::move(secret));
    }
    for (auto& secret : secrets_in(pg_url)) secrets.push_back(std::move(secret));
    if (!console_token.empty()) secrets.push_back(console_token);
    if (!console_read_token.empty()) secrets.push_back(console_read_token);
    return secrets;
}

audit::AuditOptions ServiceOptions::audit() const {
    audit::AuditOptions options;
    options.amqp = amqp();
    options.store = store();
    options.names = delay::TopologyNames(prefix);
    // Quorum delay queues dead-letter at least once: their releases need no doubt.
    options.doubt_releases_around_outages = queue_type != "quorum";
    // A burst's releases must be recorded well before the loader would take them for lost
    // and publish them again.
    if (!no_audit) {
        const auto resend = parse_duration(kResendAfterOption, resend_after);
        options.burst_hold = std::min(options.burst_hold, resend / 2);
    }
    return options;
}

forward::ForwarderOptions ServiceOptions::forwarder() const {
    forward::ForwarderOptions options;
    options.amqp = amqp();
    options.names = delay::TopologyNames(prefix);
    options.audit = !no_audit;
    return options;
}

}  // namespace hourglass::cli
