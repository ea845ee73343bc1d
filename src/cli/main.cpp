// hourglass: a durable job scheduler for RabbitMQ. See README.md and docs/reference.md.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <tuple>

#include "amqp/connection.hpp"
#include "cli/client.hpp"
#include "cli/commands.hpp"
#include "cli/config_file.hpp"
#include "cli/settings.hpp"
#include "common/logging.hpp"
#include "store/errors.hpp"

using hourglass::cli::environment_variable;
using hourglass::cli::help_text;
using hourglass::cli::ServiceOptions;
using hourglass::cli::setting;

namespace {

// A command line or config file that cannot be used (sysexits.h EX_USAGE).
constexpr int kExitUsage = 64;

// A setting of the table (src/cli/settings.hpp): its help, environment variable and, for a
// count, its bounds come from there.
template <typename T>
CLI::Option* add_setting(CLI::App& command, std::string_view flag, T& variable) {
    const auto& row = setting(flag);
    auto* option = command.add_option(std::string(flag), variable, help_text(row))
                       ->envname(environment_variable(flag));
    if (row.range) option->check(CLI::Range(row.range->min, row.range->max));
    return option;
}

void add_common_options(CLI::App& command, ServiceOptions& options) {
    add_setting(command, "--config", options.config);
    add_setting(command, "--log-level", options.log_level)
        ->check(CLI::IsMember(hourglass::logging::level_names()));
    add_setting(command, "--log-format", options.log_format)
        ->check(CLI::IsMember({"text", "json"}));
}

void add_amqp_options(CLI::App& command, ServiceOptions& options) {
    add_setting(command, "--amqp-url", options.amqp_url);
    add_setting(command, "--amqp-ca-cert", options.amqp_ca_cert)->check(CLI::ExistingFile);
    add_setting(command, "--amqp-cert", options.amqp_cert)->check(CLI::ExistingFile);
    add_setting(command, "--amqp-key", options.amqp_key)->check(CLI::ExistingFile);
    add_setting(command, "--prefix", options.prefix);
}

void add_pg_options(CLI::App& command, ServiceOptions& options) {
    add_setting(command, "--pg-url", options.pg_url);
    add_setting(command, "--schema", options.schema)
        ->check([](const std::string& name) {
            const bool ok = !name.empty() && name.size() <= 63 &&
                            name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") ==
                                std::string::npos &&
                            !std::isdigit(static_cast<unsigned char>(name[0]));
            return ok ? std::string{} : "schema must be a lower-case SQL identifier";
        });
}

void add_retention_option(CLI::App& command, ServiceOptions& options) {
    add_setting(command, "--retention", options.retention);
}

// How the loader claims, holds and hands over runs; how the service stops.
void add_loader_options(CLI::App& run, ServiceOptions& options) {
    add_setting(run, "--horizon", options.horizon);
    add_setting(run, "--lease", options.lease);
    add_setting(run, "--resend-after", options.resend_after);
    add_setting(run, "--max-delay", options.max_delay);
    add_retention_option(run, options);
    add_setting(run, "--max-clock-offset", options.max_clock_offset);
    add_setting(run, "--stop-timeout", options.stop_timeout);
    add_setting(run, "--max-unconfirmed", options.max_unconfirmed);
    add_setting(run, "--slow-confirm", options.slow_confirm);
    add_setting(run, "--max-in-memory-runs", options.max_in_memory_runs);
    add_setting(run, "--max-burst-runs", options.max_burst_runs);
    add_setting(run, "--delay-lanes", options.delay_lanes);
    add_setting(run, "--realtime-publisher", options.realtime_publisher)
        ->check(CLI::IsMember({"auto", "off"}));
}

// What ingest accepts, the topology, the audit and the HTTP endpoint.
void add_intake_options(CLI::App& run, ServiceOptions& options) {
    add_setting(run, "--max-body", options.max_body);
    add_setting(run, "--allow-exchange", options.allow_exchange)
        ->check([](const std::string& expression) {
            try {
                hourglass::cli::compile_allow_exchange(expression);
                return std::string{};
            } catch (const std::invalid_argument& error) {
                return std::string(error.what());
            }
        });
    add_setting(run, "--queue-type", options.queue_type)
        ->check(CLI::IsMember({"classic", "quorum"}));
    run.add_flag("--no-audit", options.no_audit, help_text(setting("--no-audit")))
        ->envname(environment_variable("--no-audit"));
    add_setting(run, "--http", options.http)
        ->check([](const std::string& text) {
            if (text.empty() || text == "off") return std::string{};
            try {
                hourglass::http::parse_listen_address(text);
                return std::string{};
            } catch (const std::invalid_argument& error) {
                return std::string(error.what());
            }
        });
    add_setting(run, "--http-allow-host", options.http_allow_hosts)->delimiter(',');
}

// Who may act on which job (reference §3.5 "Owners").
void add_owner_options(CLI::App& run, ServiceOptions& options) {
    add_setting(run, "--command-scope", options.command_scope)
        ->check(CLI::IsMember({"any", "owner"}));
    add_setting(run, "--amqp-default-owner", options.amqp_default_owner);
    add_setting(run, "--operator", options.operators)->delimiter(',');
}

void add_console_options(CLI::App& run, ServiceOptions& options) {
    const auto long_enough = [](const std::string& token) {
        return token.empty() || token.size() >= 16
                   ? std::string{}
                   : std::string("a console token needs at least 16 characters");
    };
    add_setting(run, "--console", options.console)
        ->check(CLI::IsMember({"off", "read", "write"}));
    add_setting(run, "--console-token", options.console_token)->check(long_enough);
    add_setting(run, "--console-read-token", options.console_read_token)->check(long_enough);
}

void add_schedule_options(CLI::App& schedule, hourglass::cli::ScheduleRequest& request) {
    schedule.add_option("--key", request.routing_key, "Routing key the job is released with")
        ->required();
    auto* when = schedule.add_option_group("when", "When the job is due");
    when->add_option("--at", request.at, "Due time: RFC 3339 (2026-11-22T09:30:00Z) or epoch ms");
    when->add_option("--delay", request.delay, "Due in MS milliseconds (or 5s, 2m, 1h, 1d)");
    auto* cron = when->add_option("--cron", request.cron, "Recurring: cron expression");
    when->require_option(1);
    schedule.add_option("--tz", request.zone, "Time zone of --cron (default UTC)")->needs(cron);
    schedule.add_option("--until", request.until, "No run of --cron after this RFC 3339 time")
        ->needs(cron);
    schedule.add_option("--limit", request.limit, "At most this many runs of --cron")->needs(cron);
    schedule.add_option("--catchup", request.catchup,
                        "What runs of --cron missed while hourglass was down or the job paused "
                        "become: skip, one (default) or all")
        ->needs(cron);
    schedule.add_option("--id", request.id, "Job id (message_id); default: hourglass makes one");
    auto* body = schedule.add_option("--body", request.body, "Message body");
    schedule.add_option("--body-file", request.body_file, "Read the body from this file")
        ->excludes(body)->check(CLI::ExistingFile);
    schedule.add_option("--header", request.headers, "A header name=value (repeatable)");
    schedule.add_option("--content-type", request.content_type, "content_type property");
    schedule.add_flag("--replace", request.replace,
                      "Replace a pending job with this id, or re-arm a done or cancelled one");
}

// Fills options from the config file (flag > environment > file > default), then sets up logs.
void apply_configuration(const CLI::App& app, CLI::App& command, ServiceOptions& options) {
    if (!options.config.empty()) hourglass::cli::apply_config_file(app, command, options.config);
    hourglass::logging::configure({options.log_level,
                                   hourglass::logging::parse_format(options.log_format),
                                   options.secrets()});
}

// Every command of the binary, with the values its flags fill. CLI11 keeps references to
// these members: built in place, never copied.
struct CommandLine {
    // One options struct per command: CLI11 reads environment variables for every command, so
    // shared variables would let an unused command's environment overwrite the used one's flags.
    ServiceOptions run_options, migrate_options, status_options, prune_options, schedule_options,
        cancel_options, pause_options, resume_options;
    bool dry_run = false;
    bool prune_dry_run = false;
    std::string timeout = "10s";
    hourglass::cli::ScheduleRequest request;
    std::string cancel_id, cancel_prefix, pause_id, resume_id;
    CLI::App* run = nullptr;
    CLI::App* migrate = nullptr;
    CLI::App* status = nullptr;
    CLI::App* prune = nullptr;
    CLI::App* schedule = nullptr;
    CLI::App* cancel = nullptr;
    CLI::App* pause = nullptr;
    CLI::App* resume = nullptr;
};

// run, migrate, status and prune: the service and its database.
void add_service_commands(CLI::App& app, CommandLine& line) {
    line.run = app.add_subcommand("run", "Run the service (ingest, loader, audit, HTTP)");
    add_common_options(*line.run, line.run_options);
    add_amqp_options(*line.run, line.run_options);
    add_pg_options(*line.run, line.run_options);
    add_loader_options(*line.run, line.run_options);
    add_intake_options(*line.run, line.run_options);
    add_owner_options(*line.run, line.run_options);
    add_console_options(*line.run, line.run_options);

    line.migrate = app.add_subcommand("migrate", "Apply database migrations");
    add_common_options(*line.migrate, line.migrate_options);
    add_pg_options(*line.migrate, line.migrate_options);
    line.migrate->add_flag("--dry-run", line.dry_run, "List pending migrations without applying them");

    line.status = app.add_subcommand("status", "Show job counts, lag, lateness and leader locks held");
    add_common_options(*line.status, line.status_options);
    add_pg_options(*line.status, line.status_options);

    line.prune = app.add_subcommand(
        "prune", "Delete ended jobs older than --retention now (hourglass run does it all along)");
    add_common_options(*line.prune, line.prune_options);
    add_pg_options(*line.prune, line.prune_options);
    add_retention_option(*line.prune, line.prune_options);
    line.prune->add_flag("--dry-run", line.prune_dry_run, "Count what would be deleted, delete nothing");
}

// schedule, cancel, pause and resume: commands published to the service, receipts awaited.
void add_client_commands(CLI::App& app, CommandLine& line) {
    const auto client_footer =
        "Prints the receipt JSON. Exit code: 0 scheduled, replaced, duplicate, cancelled,\n"
        "paused or resumed;\n"
        "3 rejected; 4 not_found or too_late; 5 no receipt in time; 2 cannot connect;\n"
        "64 bad arguments; 1 any other error.";
    line.schedule = app.add_subcommand("schedule", "Publish a job and wait for its receipt");
    add_common_options(*line.schedule, line.schedule_options);
    add_amqp_options(*line.schedule, line.schedule_options);
    add_schedule_options(*line.schedule, line.request);
    line.schedule->add_option("--timeout", line.timeout, "How long to wait for the receipt")
        ->capture_default_str();
    line.schedule->footer(client_footer);

    line.cancel = app.add_subcommand(
        "cancel", "Cancel a job, or every pending job of a routing key prefix, and wait for the receipt");
    add_common_options(*line.cancel, line.cancel_options);
    add_amqp_options(*line.cancel, line.cancel_options);
    auto* cancel_by_id = line.cancel->add_option("id", line.cancel_id, "Job id");
    line.cancel
        ->add_option("--routing-key-prefix", line.cancel_prefix,
                     "Cancel every pending or paused job whose routing key starts with this; "
                     "the receipt counts them")
        ->excludes(cancel_by_id);
    line.cancel->add_option("--timeout", line.timeout, "How long to wait for the receipt")
        ->capture_default_str();
    line.cancel->footer(client_footer);

    // pause and resume: the same shape, one recurring job each.
    line.pause = app.add_subcommand("pause", "Pause a recurring job and wait for the receipt");
    line.resume = app.add_subcommand(
        "resume", "Resume a paused recurring job and wait for the receipt (x-cron-catchup "
                  "decides what its missed runs become)");
    for (auto [subcommand, id, subcommand_options] :
         {std::tuple{line.pause, &line.pause_id, &line.pause_options},
          {line.resume, &line.resume_id, &line.resume_options}}) {
        add_common_options(*subcommand, *subcommand_options);
        add_amqp_options(*subcommand, *subcommand_options);
        subcommand->add_option("id", *id, "Job id of the recurring job")->required();
        subcommand->add_option("--timeout", line.timeout, "How long to wait for the receipt")
            ->capture_default_str();
        subcommand->footer(client_footer);
    }
}

// The command parsed, and its options.
std::pair<CLI::App*, ServiceOptions*> parsed_command(CommandLine& line) {
    const std::pair<CLI::App*, ServiceOptions*> commands[] = {
        {line.run, &line.run_options},           {line.migrate, &line.migrate_options},
        {line.status, &line.status_options},     {line.prune, &line.prune_options},
        {line.schedule, &line.schedule_options}, {line.cancel, &line.cancel_options},
        {line.pause, &line.pause_options},       {line.resume, &line.resume_options}};
    for (const auto& [command, options] : commands) {
        if (command->parsed()) return {command, options};
    }
    throw CLI::RequiredError("a command");
}

int dispatch(CommandLine& line, const CLI::App* command, const ServiceOptions& options) {
    if (command == line.run) return hourglass::cli::run_service(options);
    if (command == line.migrate) return hourglass::cli::run_migrate(options, line.dry_run);
    if (command == line.status) return hourglass::cli::run_status(options);
    if (command == line.prune) return hourglass::cli::run_prune(options, line.prune_dry_run);
    const auto names = hourglass::delay::TopologyNames(options.prefix);
    const auto wait = hourglass::cli::parse_duration(hourglass::cli::kTimeoutOption, line.timeout);
    if (command == line.schedule) {
        return hourglass::cli::send_command(
            options.amqp(), hourglass::cli::schedule_command(line.request, names), wait);
    }
    using hourglass::cli::Control;
    const auto [control, target] =
        command == line.pause    ? std::pair{Control::pause, line.pause_id}
        : command == line.resume ? std::pair{Control::resume, line.resume_id}
        : line.cancel_prefix.empty() ? std::pair{Control::cancel, line.cancel_id}
                                     : std::pair{Control::cancel_prefix, line.cancel_prefix};
    return hourglass::cli::send_command(
        options.amqp(), hourglass::cli::control_command(control, target, names), wait);
}

// One clear line on stderr, and the exit code that says what failed.
int report_failure(const std::exception& error, const ServiceOptions& options) {
    using hourglass::cli::ExitCode;
    if (dynamic_cast<const hourglass::amqp::ConnectionError*>(&error) != nullptr) {
        hourglass::logging::report_fatal(error.what());
        return ExitCode::kExitUnreachable;
    }
    if (hourglass::store::is_unreachable(error)) {
        hourglass::logging::report_fatal(std::string("cannot connect to PostgreSQL: ") + error.what());
        return ExitCode::kExitUnreachable;
    }
    if (hourglass::store::is_missing_table(error)) {
        hourglass::logging::report_fatal("PostgreSQL: schema " + options.schema +
                                         " has no hourglass tables (run hourglass migrate): " +
                                         error.what());
        return ExitCode::kExitFailed;
    }
    hourglass::logging::report_fatal(error.what());
    return ExitCode::kExitFailed;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"hourglass: a durable job scheduler for RabbitMQ"};
    app.require_subcommand(1);
    app.footer(
        "Settings: every flag is also an environment variable and a config file key (docs/operating.md).\n"
        "Run `hourglass COMMAND --help` for the flags of one command.");
    CommandLine line;
    add_service_commands(app, line);
    add_client_commands(app, line);

    CLI::App* command = nullptr;
    ServiceOptions* options = nullptr;
    try {
        app.parse(argc, argv);
        std::tie(command, options) = parsed_command(line);
        if (command == line.cancel && line.cancel_id.empty() && line.cancel_prefix.empty()) {
            throw CLI::RequiredError("cancel: a job id or --routing-key-prefix");
        }
        apply_configuration(app, *command, *options);
        // Durations from flags, environment or the config file: a unit and the option's bounds.
        options->validate_durations();
        hourglass::cli::parse_duration(hourglass::cli::kTimeoutOption, line.timeout);
    } catch (const CLI::ParseError& error) {
        const int code = app.exit(error);
        return code == 0 ? 0 : kExitUsage;
    } catch (const std::exception& error) {
        hourglass::logging::report_fatal(error.what());
        return kExitUsage;
    }
    try {
        return dispatch(line, command, *options);
    } catch (const std::exception& error) {
        return report_failure(error, *options);
    }
}
