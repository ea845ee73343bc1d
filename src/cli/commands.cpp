#include "cli/commands.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <thread>

#include "common/retry.hpp"
#include "common/thread_name.hpp"
#include "console/console.hpp"
#include "cron/recurrence.hpp"
#include "hourglass/metrics.hpp"
#include "http/http_server.hpp"
#include "http/readiness.hpp"
#include "http/stats_refresher.hpp"
#include "ingest/sql_intake.hpp"
#include "store/claim_store.hpp"
#include "store/upkeep_store.hpp"
#include "store/migrations.hpp"

namespace hourglass::cli {

namespace {

// Blocks SIGTERM and SIGINT in the calling thread and every thread started after it (so
// construct it before any), and turns the first one into a stop request. If the service has not
// stopped `deadline` after the signal (a broker that blocks publishers, a database that hangs),
// the process exits anyway: what is unfinished is unacked or leased, so redelivery and lease
// takeover finish it and nothing is lost (reference §9). The destructor, also when start-up fails
// with an exception, ends the thread waiting for the signal.
class StopOnSignal {
public:
    StopOnSignal(std::stop_source& stop, Milliseconds deadline) : stop_(stop) {
        sigset_t signals;
        sigemptyset(&signals);
        sigaddset(&signals, SIGTERM);
        sigaddset(&signals, SIGINT);
        pthread_sigmask(SIG_BLOCK, &signals, nullptr);
        thread_ = std::jthread([this, signals, deadline](std::stop_token) {
            name_this_thread("hg-signals");
            int received = 0;
            sigwait(&signals, &received);
            if (stop_.stop_requested()) return;  // woken by the destructor
            spdlog::info("received {}, stopping: no new commands, finishing in-flight work "
                         "(at most {} ms)",
                         received == SIGTERM ? "SIGTERM" : "SIGINT", deadline.count());
            stop_.request_stop();
            std::unique_lock lock(mutex_);
            if (!stopped_wake_.wait_for(lock, deadline, [this] { return stopped_; })) {
                spdlog::warn("not stopped {} ms after the signal: exiting now; unacked commands "
                             "are redelivered and leased runs taken over",
                             deadline.count());
                spdlog::default_logger()->flush();
                std::_Exit(0);
            }
        });
    }
    ~StopOnSignal() {
        {
            std::lock_guard lock(mutex_);
            stopped_ = true;
        }
        stopped_wake_.notify_all();
        if (!stop_.stop_requested()) {
            stop_.request_stop();
            pthread_kill(thread_.native_handle(), SIGTERM);  // blocked, so only sigwait sees it
        }
        thread_.join();
    }
    StopOnSignal(const StopOnSignal&) = delete;
    StopOnSignal& operator=(const StopOnSignal&) = delete;

private:
    std::stop_source& stop_;
    std::mutex mutex_;
    std::condition_variable stopped_wake_;
    bool stopped_ = false;
    std::jthread thread_;
};

// Gives each component the shared metrics and counts its connections under its name.
template <typename ComponentOptions>
void attach_metrics(ComponentOptions& options, metrics::Component component,
                    const std::shared_ptr<metrics::ServiceMetrics>& service_metrics) {
    options.metrics = service_metrics;
    options.amqp.open_connections =
        service_metrics->open_connections(component, metrics::Peer::rabbitmq);
    if constexpr (requires { options.store; }) {
        options.store.open_connections =
            service_metrics->open_connections(component, metrics::Peer::postgresql);
    }
}

std::string format_optional(const std::optional<double>& value) {
    if (!value) return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", *value);
    return text;
}

}  // namespace

int run_migrate(const ServiceOptions& options, bool dry_run) {
    const auto report = store::migrate(options.store(), dry_run);
    for (const auto& name : report.already_applied) std::cout << "applied   " << name << "\n";
    for (const auto& name : report.applied) {
        std::cout << (dry_run ? "pending   " : "applying  ") << name << "\n";
    }
    std::cout << (report.applied.empty() ? "schema is current" :
                  dry_run ? "dry run: nothing applied" : "migrations applied")
              << " (schema " << options.schema << ")\n";
    return 0;
}

int run_status(const ServiceOptions& options) {
    const auto stats = store::open_stats_store(options.store())->stats();
    const auto row = [](std::string_view label, const std::string& value) {
        char line[128];
        std::snprintf(line, sizeof line, "%-22s %s\n", std::string(label).c_str(), value.c_str());
        return std::string(line);
    };
    std::cout << row("pending", std::to_string(stats.pending))
              << row("enqueued", std::to_string(stats.enqueued))
              << row("done", std::to_string(stats.done))
              << row("cancelled", std::to_string(stats.cancelled))
              << row("paused", std::to_string(stats.paused))
              << row("sql commands waiting",
                     stats.sql_commands_waiting > kSqlCommandsCountCap
                         ? "more than " + std::to_string(kSqlCommandsCountCap)
                         : std::to_string(stats.sql_commands_waiting))
              << row("oldest pending lag", std::to_string(stats.oldest_pending_lag_ms) + " ms")
              << row("next due", stats.next_due_at ? format_rfc3339_ms(*stats.next_due_at) : "-")
              << row("lateness, last hour",
                     "p50 " + format_optional(stats.lateness.p50_ms) + " ms, p99 " +
                         format_optional(stats.lateness.p99_ms) + " ms, max " +
                         format_optional(stats.lateness.max_ms) + " ms");
    return 0;
}

int run_prune(const ServiceOptions& options, bool dry_run) {
    const auto retention = options.retention_options();
    if (!retention) {
        std::cout << "retention is off: nothing to prune\n";
        return 0;
    }
    const auto jobs = store::open_retention_store(options.store());
    const auto& before = options.retention;
    if (dry_run) {
        std::cout << jobs->count_prunable(retention->retention)
                  << " ended jobs (done or cancelled, one-shot) ended more than " << before
                  << " ago would be deleted; table and indexes: " << jobs->table_bytes()
                  << " bytes\n";
        return 0;
    }
    std::size_t progress = 0;
    const auto deleted = retention::prune_round(
        [&](std::size_t limit) { return jobs->prune_ended(retention->retention, limit); },
        *retention, std::stop_token{}, [&](std::size_t batch) {
            progress += batch;
            if (progress % 100000 < batch) std::cout << "deleted " << progress << " ...\n" << std::flush;
        });
    std::cout << "deleted " << deleted << " ended jobs older than " << before
              << "; table and indexes: " << jobs->table_bytes() << " bytes\n";
    return 0;
}

int run_service(const ServiceOptions& options) {
    // Everything that can be wrong in the configuration fails here, before any thread starts.
    const auto service_metrics = std::make_shared<metrics::ServiceMetrics>();
    auto loader_options = options.loader();
    auto ingest_options = options.ingest();
    auto audit_options = options.audit();
    attach_metrics(loader_options, metrics::Component::loader, service_metrics);
    attach_metrics(ingest_options, metrics::Component::ingest, service_metrics);
    attach_metrics(audit_options, metrics::Component::audit, service_metrics);
    auto forwarder_options = options.forwarder();
    attach_metrics(forwarder_options, metrics::Component::forward, service_metrics);
    const auto topology = options.topology();
    const auto ladder = delay::DelayLadder::for_horizon(loader_options.horizon);
    const auto http_address = options.http_address();
    const auto retention_options = options.retention_options();

    std::stop_source stop;
    const StopOnSignal stop_on_signal(stop, options.stop_timeout_ms());
    spdlog::info("hourglass {} starting: amqp {}, postgresql {}, prefix {}, schema {}, horizon {} ms, "
                 "{} TTLs ({} delay lanes untargeted, 1 targeted), queue type {}, audit {}, "
                 "allowed target exchanges {}, http {}",
                 HOURGLASS_VERSION, amqp::mask_url_password(options.amqp_url),
                 store::mask_pg_url(options.pg_url), options.prefix, options.schema,
                 loader_options.horizon.count(), ladder.ttls().size(), topology.delay_lanes,
                 options.queue_type,
                 options.no_audit ? "off" : "on",
                 options.allow_exchange.empty() ? "none" : "/" + options.allow_exchange + "/",
                 http_address ? options.http : "off");

    // Reads the stats view for the gauges and the console once the schema is migrated; declared
    // before the console and the HTTP server, which read it, so that it outlives them.
    std::optional<http::StatsRefresher> stats_refresher;
    std::atomic<bool> stats_refresher_started{false};
    console::Console console(
        {options.store(), options.console_token,
         [&]() -> std::optional<http::StatsRefresher::Reading> {
             if (!stats_refresher_started.load(std::memory_order_acquire)) return std::nullopt;
             return stats_refresher->latest();
         }});
    // Serving /healthz from the start; /readyz says what start-up is still waiting for.
    std::optional<http::HttpServer> http_server;
    if (http_address) {
        http_server.emplace(
            *http_address,
            http::Endpoints{
                [&] { return service_metrics->registry().render_prometheus(); },
                [&] { return http::readiness_problem(*service_metrics, !options.no_audit); },
                [&](httplib::Server& server) { console.add_routes(server); },
                options.http_allow_hosts});
        spdlog::info("http: /metrics, /healthz, /readyz and the console ({}) on {}:{}",
                     options.console_token.empty() ? "read-only" : "cancel with the token",
                     http_address->host, http_server->port());
    }

    // Start-up problems (bad URL, unreachable service, wrong credentials) end the process with
    // one clear line; once running, lost connections are retried with backoff.
    // A migration blocked by another transaction's lock is tried again (unready meanwhile):
    // exiting would restart the process into the same lock, with the instances' statements
    // queued behind each attempt.
    for (auto pause = std::chrono::seconds{2};;
         pause = std::min(pause * 2, std::chrono::seconds{60})) {
        try {
            const auto report = store::migrate(options.store(), false);
            for (const auto& name : report.applied) spdlog::info("applied migration {}", name);
            service_metrics->set_migrations_current(true);
            break;
        } catch (const store::MigrationBlocked& blocked) {
            spdlog::warn("{} (trying again in {} s)", blocked.what(), pause.count());
            if (!sleep_unless_stopped(stop.get_token(), pause)) return 0;
        }
    }
    {
        // One clock (reference §6): due times are compared on PostgreSQL's clock.
        const auto offset = store::open_claim_store(options.store())->measure_clock_offset();
        const auto offset_ms = std::chrono::duration_cast<Milliseconds>(offset).count();
        if (std::chrono::abs(offset) > loader_options.max_clock_offset) {
            throw std::runtime_error(
                "this host's clock is " + std::to_string(std::abs(offset_ms)) + " ms " +
                (offset_ms < 0 ? "ahead of" : "behind") + " PostgreSQL's, more than "
                "--max-clock-offset (" + options.max_clock_offset +
                "): synchronise it (NTP), or raise --max-clock-offset to run corrected");
        }
        set_clock_offset(offset);
        spdlog::info("clock: {} ms from PostgreSQL's, corrected", -offset_ms);
    }
    {
        auto connection_options = options.amqp();
        connection_options.connection_name = "hourglass setup";
        amqp::Connection connection(connection_options);
        connection.open_channel(1);
        delay::declare_topology(connection, 1, topology, ladder);
        if (!topology.audit) {
            // An earlier run with the audit left its queue bound: it fills with every release.
            const auto copies = connection.queue_message_count(1, topology.names.audit);
            if (copies && *copies > 0) {
                spdlog::warn("{} holds {} release copies and --no-audit is set: unless another "
                             "instance runs with the audit, delete that queue",
                             topology.names.audit, *copies);
            }
        }
        service_metrics->set_topology_declared(true);
        spdlog::info("topology declared ({}.in -> {}.out)", options.prefix, options.prefix);
    }
    stats_refresher.emplace(options.store(), *service_metrics, Milliseconds{5000},
                            loader::kTakeoverAfter);
    stats_refresher_started.store(true, std::memory_order_release);
    retention::RetentionOptions pruning;
    if (retention_options) {
        pruning = *retention_options;
    } else {
        pruning.store = options.store();
        pruning.keep_ended_jobs = true;
    }
    const retention::Pruner pruner(pruning, service_metrics->registry());

    loader::Loader loader(loader_options, cron::NextDueAfterHandover{});
    std::jthread loader_thread([&](std::stop_token) {
        name_this_thread("hg-loader-claim");
        loader.run(stop.get_token());
    });
    std::jthread ingest_thread([&](std::stop_token) {
        name_this_thread("hg-ingest");
        const ingest::LoaderLink link{
            .wake = [&](TimePoint due) { loader.wake_for(due); },
            .offer_claims = [&](std::size_t runs, std::size_t bytes) {
                return loader.offer_insert_claims(runs, bytes);
            },
            .adopt_claims = [&](const InsertClaimOffer& offer, std::vector<ClaimedRun> runs) {
                loader.adopt_insert_claims(offer, std::move(runs));
            }};
        ingest::run_ingest(ingest_options, link, stop.get_token());
    });
    // Commands inserted into hourglass.commands by applications (reference §3.4).
    std::jthread sql_intake_thread([&](std::stop_token) {
        const ingest::SqlIntakeOptions sql_intake_options{.store = ingest_options.store,
                                                          .names = ingest_options.names,
                                                          .limits = ingest_options.limits,
                                                          .horizon = ingest_options.horizon,
                                                          .metrics = service_metrics};
        // The SQL intake claims nothing at insert: it only wakes the loader.
        ingest::LoaderLink link;
        link.wake = [&](TimePoint due) { loader.wake_for(due); };
        ingest::run_sql_intake(sql_intake_options, link, stop.get_token());
    });
    // Runs with an x-hourglass-exchange target, released by the forward ladder.
    std::jthread forward_thread([&](std::stop_token) {
        name_this_thread("hg-forward");
        forward::run_forwarder(forwarder_options, stop.get_token());
    });
    std::jthread audit_thread;
    if (!options.no_audit) {
        audit_thread = std::jthread(
            [&](std::stop_token) {
                name_this_thread("hg-audit");
                audit::run_audit(audit_options, stop.get_token());
            });
    }
    spdlog::info("hourglass running");

    ingest_thread.join();
    sql_intake_thread.join();
    forward_thread.join();
    audit_thread = {};
    loader_thread.join();
    spdlog::info("hourglass stopped");
    return 0;
}

}  // namespace hourglass::cli
