// Configuration of every command, built in one place from flags, environment variables and the
// optional config file (flag > environment > file > default). Names are documented in
// docs/operating.md ("Settings").
#pragma once

#include <optional>
#include <functional>
#include <string_view>
#include <string>

#include "audit/audit_consumer.hpp"
#include "delay/topology.hpp"
#include "forward/forwarder.hpp"
#include "hourglass/command.hpp"
#include "http/http_server.hpp"
#include "ingest/ingest.hpp"
#include "loader/loader.hpp"
#include "retention/pruner.hpp"

namespace hourglass::cli {

struct ServiceOptions {
    std::string amqp_url = "amqp://guest:guest@127.0.0.1:5672/%2f";
    std::string amqp_ca_cert;
    std::string amqp_cert;
    std::string amqp_key;
    std::string pg_url = "postgresql://127.0.0.1:5432/hourglass";
    std::string prefix = "hourglass";
    std::string schema = "hourglass";
    std::string queue_type = "classic";
    std::string horizon = "60s";
    std::string lease = "30s";
    std::string resend_after = "1m";
    std::string max_delay = "3650d";
    std::string stop_timeout = "10s";
    std::string retention = "7d";  // or "off"
    std::string max_clock_offset = "1s";
    std::size_t max_body = 1024 * 1024;
    std::size_t max_unconfirmed = loader::kDefaultMaxUnconfirmed;
    std::size_t max_in_memory_runs = loader::kDefaultMaxInMemoryRuns;
    std::size_t max_burst_runs = loader::kDefaultMaxBurstRuns;
    unsigned delay_lanes = delay::kDefaultDelayLanes;
    bool no_audit = false;
    std::string realtime_publisher = "auto";  // or "off"
    // RE2 regular expression an x-hourglass-exchange target must match as a whole;
    // empty: no exchange other than <prefix>.out is allowed (reference §3.1).
    std::string allow_exchange;
    std::string log_level = "info";
    std::string log_format = "text";
    std::string http = "127.0.0.1:9464";  // "" or "off": no HTTP endpoint
    // Host names the HTTP endpoint answers besides its address (http::HostPolicy).
    std::vector<std::string> http_allow_hosts;
    std::string config;                   // config file, applied by main
    // Operator token for cancel on the console (reference §9); empty: the console is read-only.
    std::string console_token;
    std::string console = "write";  // off, read or write (console::ConsoleMode)
    // Token the console's reads need (reference §9); empty: none.
    std::string console_read_token;
    // Who may act on which job (reference §3.5): any or owner.
    std::string command_scope = "any";
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

// A duration option and the values that make sense for it (reference §9).
struct DurationOption {
    std::string_view flag;
    Milliseconds min;
    Milliseconds max;
};
inline constexpr DurationOption kHorizonOption{"--horizon", Milliseconds{1000}, Milliseconds{3600000}};
inline constexpr DurationOption kLeaseOption{"--lease", Milliseconds{1000}, Milliseconds{3600000}};
inline constexpr DurationOption kResendAfterOption{"--resend-after", Milliseconds{1000},
                                                   Milliseconds{7LL * 86400000}};
inline constexpr DurationOption kMaxDelayOption{"--max-delay", Milliseconds{1000},
                                                Milliseconds{36500LL * 86400000}};
inline constexpr DurationOption kStopTimeoutOption{"--stop-timeout", Milliseconds{1000},
                                                   Milliseconds{600000}};
inline constexpr DurationOption kRetentionOption{"--retention", Milliseconds{1000},
                                                Milliseconds{36500LL * 86400000}};
inline constexpr DurationOption kMaxClockOffsetOption{"--max-clock-offset", Milliseconds{1},
                                                     Milliseconds{3600000}};
inline constexpr DurationOption kTimeoutOption{"--timeout", Milliseconds{100}, Milliseconds{3600000}};

// parse_duration, then the option's bounds; errors name the flag.
Milliseconds parse_duration(const DurationOption& option, const std::string& text);

}  // namespace hourglass::cli
