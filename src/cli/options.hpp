// Configuration of every command, built in one place from flags, environment variables and the
// optional config file (flag > environment > file > default). Names are documented in
// docs/operating.md ("Settings").
#pragma once

#include <optional>
#include <functional>
#include <string_view>
#include <string>

#include "audit/audit_consumer.hpp"
#include "cli/settings.hpp"
#include "delay/topology.hpp"
#include "forward/forwarder.hpp"
#include "hourglass/command.hpp"
#include "http/http_server.hpp"
#include "ingest/ingest.hpp"
#include "loader/loader.hpp"
#include "retention/pruner.hpp"

namespace hourglass::cli {

// Every member a setting fills starts from its default in the settings table (settings.hpp).
struct ServiceOptions {
    std::string amqp_url = setting("--amqp-url").default_value;
    std::string amqp_ca_cert;
    std::string amqp_cert;
    std::string amqp_key;
    std::string pg_url = setting("--pg-url").default_value;
    std::string prefix = setting("--prefix").default_value;
    std::string schema = setting("--schema").default_value;
    std::string queue_type = setting("--queue-type").default_value;
    std::string horizon = setting("--horizon").default_value;
    std::string lease = setting("--lease").default_value;
    std::string resend_after = setting("--resend-after").default_value;
    std::string max_delay = setting("--max-delay").default_value;
    std::string stop_timeout = setting("--stop-timeout").default_value;
    std::string retention = setting("--retention").default_value;  // or "off"
    std::string slow_confirm = setting("--slow-confirm").default_value;  // or "off"
    std::string max_clock_offset = setting("--max-clock-offset").default_value;
    std::size_t max_body = kDefaultMaxBody;
    std::size_t max_unconfirmed = loader::kDefaultMaxUnconfirmed;
    std::size_t max_in_memory_runs = loader::kDefaultMaxInMemoryRuns;
    std::size_t max_burst_runs = loader::kDefaultMaxBurstRuns;
    unsigned delay_lanes = delay::kDefaultDelayLanes;
    bool no_audit = false;
    std::string realtime_publisher = setting("--realtime-publisher").default_value;  // or "off"
    // RE2 regular expression an x-hourglass-exchange target must match as a whole;
    // empty: no exchange other than <prefix>.out is allowed (reference §3.1).
    std::string allow_exchange;
    std::string log_level = setting("--log-level").default_value;
    std::string log_format = setting("--log-format").default_value;
    std::string http = setting("--http").default_value;  // "" or "off": no HTTP endpoint
    // Host names the HTTP endpoint answers besides its address (http::HostPolicy).
    std::vector<std::string> http_allow_hosts;
    std::string config;                   // config file, applied by main
    // Operator token for cancel on the console (reference §9); empty: the console is read-only.
    std::string console_token;
    std::string console = setting("--console").default_value;  // off, read or write
    // Token the console's reads need (reference §9); empty: none.
    std::string console_read_token;
    // Who may act on which job (reference §3.5): any or owner.
    std::string command_scope = setting("--command-scope").default_value;
    std::string amqp_default_owner;
    std::vector<std::string> operators;

    ingest::IngestOptions ingest() const;
    loader::LoaderOptions loader() const;
    audit::AuditOptions audit() const;
    forward::ForwarderOptions forwarder() const;
    amqp::ConnectionOptions amqp() const;
    store::StoreOptions store() const;
    delay::TopologyOptions topology() const;
    // Throws std::invalid_argument naming the first duration setting without a unit or out of
    // its bounds (reference §9), so that it is one usage error before anything starts.
    void validate_durations() const;
    // Retention of ended jobs; nothing when --retention is off.
    std::optional<retention::RetentionOptions> retention_options() const;
    // How long SIGTERM may take before the process exits anyway.
    Milliseconds stop_timeout_ms() const;
    // Where to serve /metrics, /healthz and /readyz; nothing when turned off.
    std::optional<http::ListenAddress> http_address() const;
    // The passwords in the connection strings, kept out of every log line.
    std::vector<std::string> secrets() const;
};

// The --allow-exchange expression (RE2 syntax), compiled into a whole-name matcher; empty when
// the expression is empty. Throws std::invalid_argument
// naming the expression and what is wrong with it.
std::function<bool(std::string_view)> compile_allow_exchange(const std::string& expression);

// "250ms", "60s", "5m", "2h", "7d" (hourglass/time.hpp), beside the option-aware overload below.
using hourglass::parse_duration;

// parse_duration, then the option's bounds; errors name the flag.
Milliseconds parse_duration(const DurationOption& option, const std::string& text);

}  // namespace hourglass::cli
