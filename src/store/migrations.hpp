// Schema migrations (reference §8): numbered SQL files from migrations/, embedded in the binary,
// applied in order inside one transaction and recorded in <schema>.schema_migrations.
// Concurrent instances serialize on an advisory lock; re-running is a no-op.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "store/store_options.hpp"

namespace pqxx {
class connection_base;
}

namespace hourglass::store {

struct Migration {
    std::string name;  // file name, e.g. 001_jobs.sql; its order is the name's order
    std::string sql;
};

const std::vector<Migration>& embedded_migrations();

struct MigrationReport {
    std::vector<std::string> applied;  // applied now (or, for a dry run, that would be)
    std::vector<std::string> already_applied;
};

// A migration gave up waiting for a lock another transaction holds on a table (3 s): nothing
// was applied; the text says which transactions are open. Trying again later may succeed.
class MigrationBlocked : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// The schema exists and belongs to another role (not one the connecting role is a member of):
// nothing was applied, and trying again will not help.
class SchemaOwnedByAnotherRole : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Migrates options.schema over a connection of its own (throws when PostgreSQL is out of reach).
MigrationReport migrate(const StoreOptions& options, bool dry_run);
MigrationReport migrate(pqxx::connection_base& connection, const std::string& schema, bool dry_run);

// Whether every embedded migration is recorded (for /readyz).
bool migrations_current(pqxx::connection_base& connection, const std::string& schema);

}  // namespace hourglass::store
