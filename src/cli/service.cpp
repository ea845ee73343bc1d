#include "cli/service.hpp"

#include <spdlog/spdlog.h>

#include <stdexcept>
#include <string>
#include <thread>

#include "amqp/channel.hpp"
#include "common/retry.hpp"
#include "common/thread_name.hpp"
#include "cron/recurrence.hpp"
#include "ingest/sql_intake.hpp"
#include "store/claim_store.hpp"
#include "store/migrations.hpp"

namespace hourglass::cli {

namespace {

// What every component shares: the metrics, the health (which counts its connections under
// its name) and the one clock; each takes those it has a place for.
struct Shared {
    std::shared_ptr<metrics::ServiceMetrics> metrics;
    std::shared_ptr<health::ServiceHealth> health;
    std::shared_ptr<DatabaseClock> clock;
};

template <typename ComponentOptions>
ComponentOptions shared_with(ComponentOptions options, health::Component component,
                             const Shared& shared) {
    options.metrics = shared.metrics;
    if constexpr (requires { options.health; }) options.health = shared.health;
    if constexpr (requires { options.clock; }) options.clock = shared.clock;
    options.amqp.open_connections =
        shared.health->open_connections(component, health::Peer::rabbitmq);
    if constexpr (requires { options.store; }) {
        options.store.open_connections =
            shared.health->open_connections(component, health::Peer::postgresql);
    }
    return options;
}

}  // namespace

Service::Service(const ServiceOptions& options)
    : options_(options),
      metrics_(std::make_shared<metrics::ServiceMetrics>()),
      health_(std::make_shared<health::ServiceHealth>(metrics_)),
      clock_(std::make_shared<DatabaseClock>()),
      loader_options_(
          shared_with(options.loader(), health::Component::loader, {metrics_, health_, clock_})),
      ingest_options_(
          shared_with(options.ingest(), health::Component::ingest, {metrics_, health_, clock_})),
      audit_options_(
          shared_with(options.audit(), health::Component::audit, {metrics_, health_, clock_})),
      forwarder_options_(shared_with(options.forwarder(), health::Component::forward,
                                     {metrics_, health_, clock_})),
      topology_(options.topology()),
      ladder_(delay::DelayLadder::for_horizon(loader_options_.horizon)),
      http_address_(options.http_address()),
      console_({options.store(), console::parse_console_mode(options.console),
                options.console_token, options.console_read_token,
                [this]() -> std::optional<http::StatsRefresher::Reading> {
                    if (!stats_refresher_started_.load(std::memory_order_acquire)) return std::nullopt;
                    return stats_refresher_->latest();
                },
                clock_}) {
    (void)options.retention_options();  // checked here, used once the pipeline runs
}

Service::~Service() = default;

void Service::run(std::stop_token stop) {
    log_start();
    start_http();
    if (!migrate(stop)) return;
    follow_database_clock();
    declare_topology();
    stats_refresher_.emplace(options_.store(), *metrics_, *health_, Milliseconds{5000},
                             loader::kTakeoverAfter, clock_);
    stats_refresher_started_.store(true, std::memory_order_release);
    run_pipeline(stop);
}

void Service::log_start() const {
    spdlog::info("hourglass {} starting: amqp {}, postgresql {}, prefix {}, schema {}, horizon {} ms, "
                 "{} TTLs ({} delay lanes untargeted, 1 targeted), queue type {}, audit {}, "
                 "allowed target exchanges {}, http {}",
                 HOURGLASS_VERSION, amqp::mask_url_password(options_.amqp_url),
                 store::mask_pg_url(options_.pg_url), options_.prefix, options_.schema,
                 loader_options_.horizon.count(), ladder_.ttls().size(), topology_.delay_lanes,
                 options_.queue_type, options_.no_audit ? "off" : "on",
                 options_.allow_exchange.empty() ? "none" : "/" + options_.allow_exchange + "/",
                 http_address_ ? options_.http : "off");
}

void Service::start_http() {
    if (!http_address_) return;
    http_server_.emplace(
        *http_address_,
        http::Endpoints{[this] { return metrics_->registry().render_prometheus(); },
                        [this] { return health_->readiness_problem(!options_.no_audit); },
                        [this](httplib::Server& server) { console_.add_routes(server); },
                        options_.http_allow_hosts});
    const auto console = options_.console == "off"   ? "off"
                         : options_.console == "read" ? "read-only"
                         : options_.console_token.empty() ? "read-only: no --console-token"
                                                          : "changes with the operator token";
    spdlog::info("http: /metrics, /healthz, /readyz and the console ({}{}) on {}:{}", console,
                 options_.console_read_token.empty() || options_.console == "off"
                     ? ""
                     : ", reads with the read token",
                 http_address_->host, http_server_->port());
}

bool Service::migrate(std::stop_token stop) {
    // Exiting would restart the process into the same lock, with the instances' statements
    // queued behind each attempt: unready meanwhile instead.
    for (auto pause = std::chrono::seconds{2};; pause = std::min(pause * 2, std::chrono::seconds{60})) {
        try {
            const auto report = store::migrate(options_.store(), false);
            for (const auto& name : report.applied) spdlog::info("applied migration {}", name);
            health_->set_migrations_current(true);
            return true;
        } catch (const store::MigrationBlocked& blocked) {
            spdlog::warn("{} (trying again in {} s)", blocked.what(), pause.count());
            if (!sleep_unless_stopped(stop, pause)) return false;
        }
    }
}

void Service::follow_database_clock() {
    const auto measured = store::open_claim_store(options_.store())->measure_clock_offset();
    const auto offset = measured.offset;
    const auto offset_ms = std::chrono::duration_cast<Milliseconds>(offset).count();
    if (std::chrono::abs(offset) > loader_options_.max_clock_offset) {
        throw std::runtime_error(
            "this host's clock is " + std::to_string(std::abs(offset_ms)) + " ms " +
            (offset_ms < 0 ? "ahead of" : "behind") + " PostgreSQL's, more than "
            "--max-clock-offset (" + options_.max_clock_offset +
            "): synchronise it (NTP), or raise --max-clock-offset to run corrected");
    }
    clock_->follow(measured);
    spdlog::info("clock: {} ms from PostgreSQL's, corrected", -offset_ms);
}

void Service::declare_topology() {
    auto connection_options = options_.amqp();
    connection_options.connection_name = "hourglass setup";
    amqp::Connection connection(connection_options);
    amqp::Channel channel(connection, 1);
    delay::declare_topology(channel, topology_, ladder_);
    if (!topology_.audit) {
        // An earlier run with the audit left its queue bound: it fills with every release.
        const auto copies = channel.queue_message_count(topology_.names.audit);
        if (copies && *copies > 0) {
            spdlog::warn("{} holds {} release copies and --no-audit is set: unless another "
                         "instance runs with the audit, delete that queue",
                         topology_.names.audit, *copies);
        }
    }
    health_->set_topology_declared(true);
    spdlog::info("topology declared ({}.in -> {}.out)", options_.prefix, options_.prefix);
}

void Service::run_pipeline(std::stop_token stop) {
    retention::RetentionOptions pruning;
    if (const auto retention = options_.retention_options()) {
        pruning = *retention;
    } else {
        pruning.store = options_.store();
        pruning.keep_ended_jobs = true;
    }
    const retention::Pruner pruner(pruning, metrics_->registry());

    loader::Loader loader(loader_options_, cron::NextDueAfterHandover{});
    std::jthread loader_thread([&](std::stop_token) {
        name_this_thread("hg-loader-claim");
        loader.run(stop);
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
        ingest::run_ingest(ingest_options_, link, stop);
    });
    // Commands inserted into hourglass.commands by applications (reference §3.4).
    std::jthread sql_intake_thread([&](std::stop_token) {
        const ingest::SqlIntakeOptions sql_intake_options{.store = ingest_options_.store,
                                                          .names = ingest_options_.names,
                                                          .limits = ingest_options_.limits,
                                                          .horizon = ingest_options_.horizon,
                                                          .metrics = metrics_,
                                                          .clock = clock_};
        // The SQL intake claims nothing at insert: it only wakes the loader.
        ingest::LoaderLink link;
        link.wake = [&](TimePoint due) { loader.wake_for(due); };
        ingest::run_sql_intake(sql_intake_options, link, stop);
    });
    // Runs with an x-hourglass-exchange target, released by the forward ladder.
    std::jthread forward_thread([&](std::stop_token) {
        name_this_thread("hg-forward");
        forward::run_forwarder(forwarder_options_, stop);
    });
    std::jthread audit_thread;
    if (!options_.no_audit) {
        audit_thread = std::jthread([&](std::stop_token) {
            name_this_thread("hg-audit");
            audit::run_audit(audit_options_, stop);
        });
    }
    spdlog::info("hourglass running");

    ingest_thread.join();
    sql_intake_thread.join();
    forward_thread.join();
    audit_thread = {};
    loader_thread.join();
    spdlog::info("hourglass stopped");
}

}  // namespace hourglass::cli
