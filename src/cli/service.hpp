// The running service (`hourglass run`, reference §9): start-up in its order (the HTTP
// endpoints, migrations, the one clock, the topology), the pipeline's components wired
// together (ingest and the SQL intake to the loader, the forwarder, the audit, the pruner and
// the stats refresher), and the stop order.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <stop_token>

#include "audit/audit_consumer.hpp"
#include "cli/options.hpp"
#include "console/console.hpp"
#include "delay/topology.hpp"
#include "forward/forwarder.hpp"
#include "common/database_clock.hpp"
#include "common/health.hpp"
#include "common/metrics.hpp"
#include "http/http_server.hpp"
#include "http/stats_refresher.hpp"
#include "ingest/ingest.hpp"
#include "loader/loader.hpp"
#include "retention/pruner.hpp"

namespace hourglass::cli {

class Service {
public:
    // Checks the whole configuration: whatever is wrong in it fails here, before any thread
    // starts (options.hpp turns each option into its component's options).
    explicit Service(const ServiceOptions& options);
    ~Service();
    Service(const Service&) = delete;
    Service& operator=(const Service&) = delete;

    // Starts up and runs until `stop`, then stops every component in order: the intakes
    // first (no new commands), then the forwarder and the audit, the loader last (it waits,
    // bounded, for its confirms and records them). Start-up problems (a bad URL, an unreachable
    // service, wrong credentials) throw; once running, lost connections are retried.
    void run(std::stop_token stop);

private:
    void log_start() const;
    // Serving /healthz from the start; /readyz says what start-up is still waiting for.
    void start_http();
    // Applies the migrations; a migration blocked by another transaction's lock is tried
    // again, with backoff. False: stopped meanwhile.
    bool migrate(std::stop_token stop);
    // One clock (reference §6): measures this host's offset to PostgreSQL's clock and corrects
    // for it; refuses an offset beyond --max-clock-offset.
    void follow_database_clock();
    void declare_topology();
    // Runs the pipeline's threads until `stop`, and joins them in the stop order.
    void run_pipeline(std::stop_token stop);

    const ServiceOptions& options_;
    std::shared_ptr<metrics::ServiceMetrics> metrics_;
    // Start-up's progress and the components' connections: /readyz.
    std::shared_ptr<health::ServiceHealth> health_;
    // The one clock (reference §6): follow_database_clock() and the loader's heartbeat set its
    // offset; ingest, the loader, the audit, the console and the stats read it.
    std::shared_ptr<DatabaseClock> clock_;
    loader::LoaderOptions loader_options_;
    ingest::IngestOptions ingest_options_;
    audit::AuditOptions audit_options_;
    forward::ForwarderOptions forwarder_options_;
    delay::TopologyOptions topology_;
    delay::DelayLadder ladder_;
    std::optional<http::ListenAddress> http_address_;
    // Reads the stats view for the gauges and the console once the schema is migrated;
    // declared before the console and the HTTP server, which read it, so that it outlives them.
    std::optional<http::StatsRefresher> stats_refresher_;
    std::atomic<bool> stats_refresher_started_{false};
    console::Console console_;
    std::optional<http::HttpServer> http_server_;
};

}  // namespace hourglass::cli
