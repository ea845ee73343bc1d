// hourglass: a durable job scheduler for RabbitMQ. See README.md and SPEC.md.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <pqxx/except>

#include "amqp/connection.hpp"
#include "cli/commands.hpp"

using hourglass::cli::ServiceOptions;

namespace {

void add_connection_options(CLI::App& app, ServiceOptions& options) {
    app.add_option("--amqp-url", options.amqp_url,
                   "RabbitMQ URL amqp://user:pass@host:port/vhost (amqps:// for TLS)")
        ->envname("HOURGLASS_AMQP_URL");
    app.add_option("--amqp-ca-cert", options.amqp_ca_cert, "CA bundle for amqps://")
        ->envname("HOURGLASS_AMQP_CA_CERT");
    app.add_option("--pg-url", options.pg_url, "PostgreSQL URI or conninfo")
        ->envname("HOURGLASS_PG_URL");
    app.add_option("--schema", options.schema, "PostgreSQL schema")
        ->envname("HOURGLASS_SCHEMA")
        ->check([](const std::string& name) {
            const bool ok = !name.empty() && name.size() <= 63 &&
                            name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") ==
                                std::string::npos &&
                            !std::isdigit(static_cast<unsigned char>(name[0]));
            return ok ? std::string{} : "schema must be a lower-case SQL identifier";
        });
    app.add_option("--log-level", options.log_level, "trace, debug, info, warn, error")
        ->envname("HOURGLASS_LOG_LEVEL");
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"hourglass: a durable job scheduler for RabbitMQ"};
    app.require_subcommand(1);
    ServiceOptions options;

    auto* run = app.add_subcommand("run", "Run the service (ingest, loader, audit)");
    add_connection_options(*run, options);
    run->add_option("--prefix", options.prefix, "Name prefix of exchanges and queues")
        ->envname("HOURGLASS_PREFIX");
    run->add_option("--horizon", options.horizon,
                    "How far ahead jobs are handed to the delay queues (e.g. 60s)")
        ->envname("HOURGLASS_HORIZON");
    run->add_option("--lease", options.lease,
                    "How long a claim lasts before another instance may take it over")
        ->envname("HOURGLASS_LEASE");
    run->add_option("--max-delay", options.max_delay, "Longest accepted delay (e.g. 3650d)")
        ->envname("HOURGLASS_MAX_DELAY");
    run->add_option("--max-body", options.max_body, "Largest accepted body in bytes")
        ->envname("HOURGLASS_MAX_BODY");
    run->add_option("--queue-type", options.queue_type, "classic or quorum")
        ->envname("HOURGLASS_QUEUE_TYPE")
        ->check(CLI::IsMember({"classic", "quorum"}));
    run->add_flag("--no-audit", options.no_audit,
                  "Do not observe releases (jobs then end in state enqueued)")
        ->envname("HOURGLASS_NO_AUDIT");

    bool dry_run = false;
    auto* migrate = app.add_subcommand("migrate", "Apply database migrations");
    add_connection_options(*migrate, options);
    migrate->add_flag("--dry-run", dry_run, "List pending migrations without applying them");

    auto* status = app.add_subcommand("status", "Show job counts, lag and lateness");
    add_connection_options(*status, options);

    CLI11_PARSE(app, argc, argv);
    spdlog::set_level(spdlog::level::from_str(options.log_level));

    try {
        if (run->parsed()) return hourglass::cli::run_service(options);
        if (migrate->parsed()) return hourglass::cli::run_migrate(options, dry_run);
        if (status->parsed()) return hourglass::cli::run_status(options);
    } catch (const pqxx::broken_connection& error) {
        std::cerr << "hourglass: cannot connect to PostgreSQL: " << error.what() << "\n";
        return 2;
    } catch (const hourglass::amqp::Error& error) {
        std::cerr << "hourglass: RabbitMQ: " << error.what() << "\n";
        return 2;
    } catch (const std::exception& error) {
        std::cerr << "hourglass: " << error.what() << "\n";
        return 1;
    }
    return 0;
}
