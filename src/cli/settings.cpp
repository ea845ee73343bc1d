#include "cli/settings.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <stdexcept>

#include "delay/topology.hpp"
#include "hourglass/defaults.hpp"
#include "loader/loader.hpp"

namespace hourglass::cli {

namespace {

std::string bounds_of(const DurationOption& option) {
    return format_duration(option.min) + "–" + format_duration(option.max);
}

std::string bounds_of(CountRange range) {
    return std::to_string(range.min) + "–" + std::to_string(range.max);
}

Setting duration(std::string_view flag, std::string default_value, const DurationOption& option,
                 std::string_view help, std::string_view meaning) {
    return {flag, std::move(default_value), {}, bounds_of(option), std::nullopt, help, meaning};
}

Setting count(std::string_view flag, std::size_t default_value, std::optional<CountRange> range,
              std::string_view help, std::string_view meaning) {
    return {flag, std::to_string(default_value), {}, range ? bounds_of(*range) : std::string{},
            range, help, meaning};
}

Setting text(std::string_view flag, std::string default_value, std::string_view help,
             std::string_view meaning, std::string_view no_default = {}) {
    return {flag, std::move(default_value), no_default, {}, std::nullopt, help, meaning};
}

// RabbitMQ, PostgreSQL and the names hourglass uses in them.
std::vector<Setting> connection_settings() {
    return {
        text("--amqp-url", "amqp://guest:guest@127.0.0.1:5672/%2f",
             "RabbitMQ URL amqp://user:pass@host:port/vhost (amqps:// for TLS); several "
             "separated by spaces are tried in turn",
             "RabbitMQ URL (`amqps://` for TLS); several separated by spaces (the nodes of a "
             "cluster) are tried in turn at each connection attempt "
             "([Clustering](operating.md#clustering))"),
        text("--amqp-ca-cert", "",
             "PEM file of the CA(s) that signed the broker's certificate (amqps://)",
             "PEM file of the CA(s) that signed the broker's certificate (`amqps://` only; "
             "[TLS](operating.md#tls))",
             "the system CA bundle"),
        text("--amqp-cert", "", "PEM client certificate for amqps:// (with --amqp-key)",
             "PEM client certificate for `amqps://`, with `--amqp-key`"),
        text("--amqp-key", "", "PEM private key of --amqp-cert",
             "PEM private key of `--amqp-cert` (unencrypted)"),
        text("--pg-url", "postgresql://127.0.0.1:5432/hourglass", "PostgreSQL URI or conninfo",
             "libpq URI or conninfo; TLS with libpq's own parameters "
             "(`sslmode=verify-full&sslrootcert=…`)"),
        text("--schema", "hourglass", "PostgreSQL schema (a lower-case SQL identifier)",
             "PostgreSQL schema"),
        text("--prefix", "hourglass", "Name prefix of exchanges and queues",
             "prefix of every exchange and queue"),
    };
}

// How far ahead and how long runs are held, resent and kept; how the service stops.
std::vector<Setting> time_settings() {
    return {
        duration("--horizon", format_duration(kDefaultHorizon), kHorizonOption,
                 "How far ahead runs are handed to the delay queues",
                 "how far ahead runs are claimed and handed to the delay queues; a run can be "
                 "cancelled until then (§3.2)"),
        duration("--lease", format_duration(kDefaultLease), kLeaseOption,
                 "How long a claim lasts once its instance is fenced and no longer connected "
                 "(a live instance's claims never expire)",
                 "how long a claim lasts once its instance is fenced and no longer connected, "
                 "for the rows its takeover could not give back (a transaction held them); a "
                 "live instance's claims never expire (§6 Leases)"),
        duration("--resend-after", "1m", kResendAfterOption,
                 "Publish a one-shot run again if its release is not observed this long after "
                 "its due time (the broker lost it)",
                 "publish a one-shot run again when its release is still not observed this long "
                 "after its due time, while the broker releases (the broker lost it); needs the "
                 "audit"),
        duration("--max-delay", "3650d", kMaxDelayOption, "Longest accepted delay",
                 "longest accepted delay"),
        duration("--retention", format_duration(kDefaultRetention), kRetentionOption,
                 "Delete ended jobs (done or cancelled, one-shot or recurring) this long after "
                 "they ended; off: keep them",
                 "delete ended jobs (`done` or `cancelled`, one-shot or recurring) this long "
                 "after they ended; `off` keeps them ([Retention](operating.md#retention))"),
        duration("--max-clock-offset", format_duration(kDefaultMaxClockOffset),
                 kMaxClockOffsetOption,
                 "Refuse to start if this host's clock is further than this from PostgreSQL's",
                 "refuse to start when this host's clock is further than this from "
                 "PostgreSQL's; within it, the offset is corrected (due times are compared on "
                 "PostgreSQL's clock)"),
        duration("--stop-timeout", "10s", kStopTimeoutOption,
                 "After SIGTERM, exit at the latest this much later even if work is unfinished",
                 "after SIGTERM, exit at the latest this much later, even if the broker blocks "
                 "publishers or the database hangs; what is unfinished is unacked (redelivered) "
                 "or leased (taken over), never lost"),
    };
}

// Sizes: the largest body, and what the loader may hold in memory; how it hands over.
std::vector<Setting> loader_settings() {
    return {
        count("--max-body", kDefaultMaxBody, std::nullopt, "Largest accepted body in bytes",
              "largest accepted body, bytes"),
        count("--max-unconfirmed", loader::kDefaultMaxUnconfirmed, CountRange{1, 65536},
              "Hand-overs the loader may have awaiting the broker's confirm",
              "hand-overs the loader may have awaiting the broker's confirm; memory stays "
              "bounded by the loader's 64 MiB of claimed bodies and properties"),
        duration("--slow-confirm", format_duration(loader::kDefaultSlowConfirm), kSlowConfirmOption,
                 "A hand-over the broker confirms slower than this means it is busy: runs due "
                 "later than 5 s are then held and handed over 5 s before they are due, until "
                 "confirms are quick for 1 s; off: always a horizon ahead",
                 "a hand-over the broker confirms slower than this means the broker is busy (a "
                 "message's TTL starts when it reaches its queue): runs due later than 5 s are "
                 "then held in memory and handed over 5 s before they are due, while they fill "
                 "less than half of `--max-in-memory-runs`, until confirms are quick for 1 s; "
                 "`off`: always hand over a horizon ahead ([Hand-over while the broker is "
                 "busy](operating.md#hand-over-while-the-broker-is-busy))"),
        count("--max-in-memory-runs", loader::kDefaultMaxInMemoryRuns, CountRange{1000, 1000000},
              "Claimed runs the loader may hold while they wait for their publish time or a "
              "confirm; a burst is handed over at up to this many a second",
              "claimed runs the loader may hold while they wait for their publish instant or a "
              "confirm; a burst due at one instant is handed over at up to this many a second"),
        count("--max-burst-runs", loader::kDefaultMaxBurstRuns, CountRange{0, 1000000},
              "Runs of bursts (500 or more due at one instant) the loader may hold until their "
              "due time and publish past the delay queues, on top of --max-in-memory-runs; "
              "0 turns it off",
              "runs of bursts (500 or more runs due at one instant) the loader may hold until "
              "their due time and publish straight to the release exchange (runs with a target "
              "exchange: to the forward queue), on top of `--max-in-memory-runs` and within "
              "16 MiB of bodies and properties; the rest of a burst waits in the database until "
              "a ladder step (1 s) before its instant; `0` sends every burst through the delay "
              "queues (§6)"),
        count("--delay-lanes", delay::kDefaultDelayLanes, CountRange{1, delay::kMaxDelayLanes},
              "Delay queues per TTL, released by the broker in parallel",
              "delay queues per TTL, which the broker releases in parallel; safe to change at "
              "any time"),
        text("--realtime-publisher", "auto",
             "auto: the loader's publisher thread asks for real-time scheduling (SCHED_FIFO) "
             "and keeps normal scheduling if refused; off: never ask",
             "`auto`: the loader's publisher thread asks for real-time scheduling "
             "(`SCHED_FIFO`, priority 1) so that hand-overs leave on time on a busy machine, "
             "and keeps normal scheduling when refused; `off`: never ask "
             "([Threads](operating.md#threads))"),
    };
}

// What ingest lets through, the topology, the audit and the HTTP endpoint.
std::vector<Setting> intake_settings() {
    return {
        text("--allow-exchange", "",
             "Regular expression (RE2) of the exchanges x-hourglass-exchange may name, as a "
             "whole; unset: none but <prefix>.out",
             "RE2 expression an `x-hourglass-exchange` must match as a whole, e.g. "
             "`legacy\\.(orders\\|billing)`; matched in time linear in the name; unset: no "
             "target but `<prefix>.out`"),
        text("--queue-type", "classic", "classic or quorum for every hourglass queue",
             "`classic` or `quorum` for every hourglass queue"),
        text("--no-audit", "", "Do not observe releases (jobs then end in state enqueued)",
             "do not observe releases (jobs end in `enqueued`, never re-sent as lost)", "off"),
        text("--http", "127.0.0.1:9464",
             "host:port for /metrics, /healthz, /readyz and the console at /; \"\" or off: none",
             "`host:port` (`[::1]:9464` for IPv6) of `/metrics`, `/healthz`, `/readyz` and "
             "the console; `\"\"` or `off`: none"),
        text("--http-allow-host", "",
             "Host names the HTTP endpoint answers besides its listen address, IP addresses "
             "and localhost (e.g. the name a proxy forwards); comma-separated",
             "host names (comma-separated) the HTTP endpoint answers besides its listen "
             "address, IP addresses and `localhost`, e.g. the name a reverse proxy forwards "
             "(any other name gets 421)"),
    };
}

// The console, who may act on which job, logs and the config file.
std::vector<Setting> operator_settings() {
    return {
        text("--console", "write",
             "off: no console (/metrics and the probes stay); read: the console never changes "
             "a job; write: changes with --console-token",
             "`off`: no console (`/metrics`, `/healthz` and `/readyz` stay); `read`: the "
             "console never changes a job; `write`: changes with `--console-token`"),
        text("--console-token", "",
             "Operator token (16 characters or more) that allows cancel, pause, resume and "
             "cancel by prefix from the console; unset: the console is read-only",
             "operator token (16 characters or more) that allows cancel, pause, resume and "
             "cancel by prefix from the console; none: read-only. Never logged"),
        text("--console-read-token", "",
             "Token (16 characters or more) the console's reads need (the operator token "
             "reads too); unset: reads need none",
             "token (16 characters or more) every console read needs, the operator token "
             "reading too; none: reads need no token. Never logged"),
        text("--command-scope", "any",
             "any: a command acts on any job; owner: cancel, replace, pause, resume and cancel "
             "by prefix act only on jobs of the command's owner",
             "`any`: a command acts on any job; `owner`: only on jobs of its own owner (§3.5)"),
        text("--amqp-default-owner", "",
             "Owner of commands published to <prefix>.in without user_id",
             "owner of commands published to `hourglass.in` without `user_id` (§3.5)",
             "the empty owner"),
        text("--operator", "",
             "Owners whose commands act on every job whatever --command-scope "
             "(comma-separated RabbitMQ users or PostgreSQL roles)",
             "owners (RabbitMQ users or PostgreSQL roles, comma-separated) whose commands act "
             "on every job whatever `--command-scope`"),
        text("--log-level", "info", "Lowest level logged",
             "`trace`, `debug`, `info`, `warn`, `error`, `critical`, `off`"),
        text("--log-format", "text", "text, or json for one JSON object per line",
             "`text`, or `json`: one object per line with `time`, `level`, `message`"),
        text("--config", "",
             "TOML or INI file with settings named like the flags (see docs/operating.md)",
             "a TOML or INI file of the settings above, named like the flags without dashes "
             "([Settings](operating.md#settings))"),
    };
}

std::vector<Setting> make_settings() {
    std::vector<Setting> table;
    for (auto group : {connection_settings(), time_settings(), loader_settings(), intake_settings(),
                       operator_settings()}) {
        std::move(group.begin(), group.end(), std::back_inserter(table));
    }
    return table;
}

std::string in_backticks(const std::string& text) { return "`" + text + "`"; }

}  // namespace

const std::vector<Setting>& settings() {
    static const std::vector<Setting> table = make_settings();
    return table;
}

const Setting& setting(std::string_view flag) {
    const auto& table = settings();
    const auto it = std::find_if(table.begin(), table.end(),
                                 [&](const Setting& row) { return row.flag == flag; });
    if (it == table.end()) throw std::out_of_range("no setting " + std::string(flag));
    return *it;
}

std::string environment_variable(std::string_view flag) {
    std::string name = "HOURGLASS_";
    for (const char c : flag.substr(flag.find_first_not_of('-'))) {
        name += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return name;
}

std::string help_text(const Setting& setting) {
    std::string text(setting.help);
    std::vector<std::string> notes;
    if (!setting.bounds.empty()) notes.push_back(setting.bounds);
    if (!setting.default_value.empty()) {
        notes.push_back("default " + setting.default_value);
    } else if (!setting.no_default.empty()) {
        notes.push_back("default " + std::string(setting.no_default));
    }
    if (notes.empty()) return text;
    text += " (";
    for (std::size_t i = 0; i < notes.size(); ++i) text += (i ? ", " : "") + notes[i];
    return text + ")";
}

std::string settings_markdown() {
    std::string table = "| flag | environment | default | bounds | meaning |\n|---|---|---|---|---|\n";
    for (const auto& row : settings()) {
        const auto shown = !row.default_value.empty() ? in_backticks(row.default_value)
                           : !row.no_default.empty()  ? std::string(row.no_default)
                                                      : std::string("none");
        table += "| `" + std::string(row.flag) + "` | `" + environment_variable(row.flag) + "` | " +
                 shown + " | " + row.bounds + " | " + std::string(row.meaning) + " |\n";
    }
    return table;
}

}  // namespace hourglass::cli
