// Where and how a store connects: what every stage is given to open its own store, without
// seeing PostgreSQL's library (the stores are built in src/store).
#pragma once

#include <string>

#include "common/metrics.hpp"

namespace hourglass::store {

struct StoreOptions {
    std::string pg_url;
    std::string schema = "hourglass";
    // Counts a JobStore's connection while it is open (health::ServiceHealth::open_connections:
    // /readyz, hourglass_connected); may be null.
    metrics::Gauge* open_connections = nullptr;
    // A background reader (the stats refresher) runs without parallel workers, so its scan of
    // a large table takes one core, not every core the loader and ingest need, and without JIT,
    // which spent 2.4 of the 3.6 s of one read at 10 M jobs compiling the same plan again.
    bool background = false;
    // The instance whose loader opens this connection, if one does: the session is named after
    // it, and while one such session is open others never give back its claims, even fenced
    // (docs/architecture.md "Fencing").
    std::string session_owner;
};

// The bounds every hourglass session sets (store::connect; docs/architecture.md "Fencing",
// how long a stall delays releases).
inline constexpr const char* kSessionLockWait = "2s";
inline constexpr const char* kSessionStatementTimeout = "300s";
inline constexpr const char* kSessionIdleInTransaction = "60s";

// The URL with its password masked, for logs.
std::string mask_pg_url(const std::string& url);

}  // namespace hourglass::store
