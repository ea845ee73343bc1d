#include "cli/commands.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <pqxx/pqxx>
#include <thread>

#include "cron/recurrence.hpp"
#include "store/migrations.hpp"

namespace hourglass::cli {

namespace {

// Blocks SIGTERM and SIGINT in every thread (call before starting any) and returns a thread
// that turns the first one into a stop request.
std::jthread stop_on_signal(std::stop_source& stop) {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    return std::jthread([signals, &stop](std::stop_token) {
        int received = 0;
        sigwait(&signals, &received);
        spdlog::info("received {}, stopping: no new commands, finishing in-flight work",
                     received == SIGTERM ? "SIGTERM" : "SIGINT");
        stop.request_stop();
    });
}

std::string format_optional(const std::optional<double>& value) {
    if (!value) return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", *value);
    return text;
}

}  // namespace

int run_migrate(const ServiceOptions& options, bool dry_run) {
    auto connection = store::connect(options.store());
    const auto report = store::migrate(*connection, options.schema, dry_run);
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
    store::JobStore store(options.store());
    const auto stats = store.stats();
    std::cout << "state       jobs\n"
              << "pending     " << stats.pending << "\n"
              << "enqueued    " << stats.enqueued << "\n"
              << "done        " << stats.done << "\n"
              << "cancelled   " << stats.cancelled << "\n\n"
              << "oldest pending lag   " << stats.oldest_pending_lag_ms << " ms\n"
              << "next due             "
              << (stats.next_due_at ? format_rfc3339_ms(*stats.next_due_at) : "-") << "\n"
              << "lateness (last hour) p50 " << format_optional(stats.lateness_p50_ms)
              << " ms, p99 " << format_optional(stats.lateness_p99_ms) << " ms, max "
              << format_optional(stats.lateness_max_ms) << " ms\n";
    return 0;
}

int run_service(const ServiceOptions& options) {
    std::stop_source stop;
    auto signal_thread = stop_on_signal(stop);

    const auto loader_options = options.loader();
    const auto ingest_options = options.ingest();
    const auto audit_options = options.audit();
    const auto topology = options.topology();
    const auto ladder = delay::DelayLadder::for_horizon(loader_options.horizon);
    spdlog::info("hourglass {} starting: amqp {}, postgresql {}, prefix {}, schema {}, horizon {} ms, "
                 "{} delay queues, queue type {}, audit {}",
                 HOURGLASS_VERSION, amqp::mask_url_password(options.amqp_url),
                 store::mask_pg_url(options.pg_url), options.prefix, options.schema,
                 loader_options.horizon.count(), ladder.ttls().size(), options.queue_type,
                 options.no_audit ? "off" : "on");

    // Start-up problems (bad URL, unreachable service, wrong credentials) end the process with
    // one clear line; once running, lost connections are retried with backoff.
    {
        auto connection = store::connect(options.store());
        const auto report = store::migrate(*connection, options.schema, false);
        for (const auto& name : report.applied) spdlog::info("applied migration {}", name);
    }
    {
        auto connection_options = options.amqp();
        connection_options.connection_name = "hourglass setup";
        amqp::Connection connection(connection_options);
        connection.open_channel(1);
        delay::declare_topology(connection, 1, topology, ladder);
        spdlog::info("topology declared ({}.in -> {}.out)", options.prefix, options.prefix);
    }

    loader::Loader loader(loader_options, cron::next_due_after_handover);
    std::jthread loader_thread([&](std::stop_token) { loader.run(stop.get_token()); });
    std::jthread ingest_thread([&](std::stop_token) {
        ingest::run_ingest(ingest_options, [&] { loader.wake(); }, stop.get_token());
    });
    std::jthread audit_thread;
    if (!options.no_audit) {
        audit_thread = std::jthread(
            [&](std::stop_token) { audit::run_audit(audit_options, stop.get_token()); });
    }
    spdlog::info("hourglass running");

    ingest_thread.join();
    audit_thread = {};
    loader_thread.join();
    // The signal thread waits in sigwait; release it if the stop came from elsewhere.
    if (!stop.stop_requested()) stop.request_stop();
    pthread_kill(signal_thread.native_handle(), SIGTERM);
    signal_thread.join();
    spdlog::info("hourglass stopped");
    return 0;
}

}  // namespace hourglass::cli
