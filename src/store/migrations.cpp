#include "store/migrations.hpp"

#include <pqxx/pqxx>
#include <set>
#include <stdexcept>

#include "store/job_store.hpp"

namespace hourglass::store {

namespace {

std::set<std::string> recorded_versions(pqxx::transaction_base& tx, const std::string& schema) {
    std::set<std::string> versions;
    const auto exists = tx.exec_params1("SELECT to_regclass($1) IS NOT NULL",
                                        tx.quote_name(schema) + ".schema_migrations");
    if (!exists[0].as<bool>()) return versions;
    for (const auto& row :
         tx.exec("SELECT version FROM " + tx.quote_name(schema) + ".schema_migrations")) {
        versions.insert(row[0].as<std::string>());
    }
    return versions;
}

// How long a migration's statement waits for a lock on a table. While it waits, every other
// statement on that table queues behind it (the running instances' claims and commands), so it
// gives up soon and says why, rather than stall them all for as long as an operator's
// transaction stays open.
constexpr const char* kLockWait = "3s";
// How long a start waits for another session's migration before it says so and tries again
// later (`hourglass run` retries with a growing pause, unready meanwhile).
constexpr const char* kMigrationLockWait = "10s";

// The migration lock: schema_migrations itself, in a mode that conflicts with itself and that
// only a role allowed to change that table may take (LOCK TABLE ... SHARE ROW EXCLUSIVE needs
// UPDATE, DELETE or TRUNCATE on it), so that readers never wait and no other role can stop
// every start, as it could by holding an advisory lock. A schema not yet migrated has no such
// table: its first migration takes the advisory lock.
void take_migration_lock(pqxx::work& tx, const std::string& schema) {
    tx.exec(std::string("SET LOCAL lock_timeout = '") + kMigrationLockWait + "'");
    const auto table = tx.quote_name(schema) + ".schema_migrations";
    if (tx.exec_params1("SELECT to_regclass($1) IS NOT NULL", table)[0].as<bool>()) {
        tx.exec("LOCK TABLE " + table + " IN SHARE ROW EXCLUSIVE MODE");
    } else {
        tx.exec("SELECT pg_advisory_xact_lock(hashtext('hourglass.migrate'))");
    }
}

MigrationReport migrate_unchecked(pqxx::connection_base& connection, const std::string& schema,
                                  bool dry_run, std::string& applying);

// Transactions of this database open for longer than the lock wait, oldest first, as far as
// this role may see them (pg_stat_activity hides other roles' sessions without
// pg_read_all_stats): " Open transactions: pid 123 (idle in transaction, 45 s)."
std::string open_transactions(pqxx::connection_base& connection) {
    try {
        pqxx::nontransaction tx(connection);
        std::string text;
        for (const auto& row :
             tx.exec("SELECT pid, COALESCE(state, '?'), "
                     "floor(extract(epoch FROM now() - xact_start))::bigint FROM pg_stat_activity "
                     "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                     "AND xact_start < now() - interval '" +
                     std::string(kLockWait) +
                     "' "
                     "ORDER BY xact_start LIMIT 3")) {
            text += std::string(text.empty() ? " Open transactions: " : ", ") + "pid " +
                    row[0].c_str() + " (" + row[1].c_str() + ", " + row[2].c_str() + " s)";
        }
        return text.empty() ? text : text + ".";
    } catch (const std::exception&) {
        return {};  // the reason given is enough without this
    }
}

}  // namespace

MigrationReport migrate(pqxx::connection_base& connection, const std::string& schema, bool dry_run) {
    std::string applying;  // the migration a failure came in
    try {
        return migrate_unchecked(connection, schema, dry_run, applying);
    } catch (const pqxx::insufficient_privilege& error) {
        std::string text = error.what();
        text = text.substr(0, text.find('\n'));
        if (text.starts_with("ERROR:")) text = text.substr(text.find_first_not_of(' ', 6));
        throw std::runtime_error("PostgreSQL: migrating schema " + schema + ": " + text +
                                 " (the role lacks a privilege: see docs/operating.md \"Permissions\")");
    } catch (const pqxx::sql_error& error) {
        if (error.sqlstate() != "55P03") throw;  // lock_not_available
        if (applying.empty()) {
            throw MigrationBlocked("PostgreSQL: waited " + std::string(kMigrationLockWait) +
                                   " for the migration lock of schema " + schema +
                                   " (another instance migrating, or a transaction holding "
                                   "its schema_migrations); nothing was applied." +
                                   open_transactions(connection) + " Trying again later");
        }
        throw MigrationBlocked("PostgreSQL: migration " + applying + " waited " + kLockWait +
                               " for a lock another transaction holds on schema " + schema +
                               "; nothing was applied." + open_transactions(connection) +
                               " End that transaction, or let it finish");
    }
}

namespace {

// A schema that already exists must belong to this role (or a role it is a member of): one
// another role made could hold functions, triggers or tables that run as hourglass's role or
// read job bodies. A DBA who makes the schema for hourglass gives it AUTHORIZATION hourglass.
void refuse_schema_of_another_role(pqxx::transaction_base& tx, const std::string& schema) {
    const auto rows = tx.exec_params(
        "SELECT pg_get_userbyid(nspowner), pg_has_role(current_user, nspowner, 'MEMBER'), "
        "current_user FROM pg_namespace WHERE nspname = $1",
        schema);
    if (rows.empty() || rows[0][1].as<bool>()) return;
    throw SchemaOwnedByAnotherRole("PostgreSQL: schema " + schema + " exists and belongs to role " +
                                   rows[0][0].as<std::string>() + ", not to " +
                                   rows[0][2].as<std::string>() +
                                   " or a role it is a member of: refusing to use it (let a DBA "
                                   "run ALTER SCHEMA " + tx.quote_name(schema) + " OWNER TO " +
                                   tx.quote_name(rows[0][2].as<std::string>()) +
                                   " if it is really hourglass's)");
}

MigrationReport migrate_unchecked(pqxx::connection_base& connection, const std::string& schema,
                                  bool dry_run, std::string& applying) {
    MigrationReport report;
    pqxx::work tx(connection);
    // One migrator at a time, whatever the number of instances starting together. A migration
    // may take minutes (an index on a large table): its statements are not bound by the
    // session's statement_timeout.
    tx.exec("SET LOCAL statement_timeout = 0");
    take_migration_lock(tx, schema);
    refuse_schema_of_another_role(tx, schema);
    const auto versions = recorded_versions(tx, schema);
    for (const auto& migration : embedded_migrations()) {
        if (versions.count(migration.name)) {
            report.already_applied.push_back(migration.name);
        } else {
            report.applied.push_back(migration.name);
        }
    }
    if (dry_run || report.applied.empty()) return report;

    const auto quoted_schema = tx.quote_name(schema);
    // Only when missing: CREATE SCHEMA (even IF NOT EXISTS) needs the CREATE privilege on the
    // database, which a role that merely owns a schema a DBA made for it does not have.
    if (tx.exec_params("SELECT 1 FROM pg_namespace WHERE nspname = $1", schema).empty()) {
        tx.exec("CREATE SCHEMA " + quoted_schema);
    }
    tx.exec("CREATE TABLE IF NOT EXISTS " + quoted_schema +
            ".schema_migrations (version text PRIMARY KEY, "
            "applied_at timestamptz NOT NULL DEFAULT now())");
    tx.exec("SET LOCAL search_path TO " + quoted_schema);
    tx.exec(std::string("SET LOCAL lock_timeout = '") + kLockWait + "'");
    for (const auto& migration : embedded_migrations()) {
        if (versions.count(migration.name)) continue;
        applying = migration.name;
        tx.exec(migration.sql);
        tx.exec_params("INSERT INTO schema_migrations (version) VALUES ($1)", migration.name);
    }
    tx.commit();
    return report;
}

}  // namespace

bool migrations_current(pqxx::connection_base& connection, const std::string& schema) {
    pqxx::read_transaction tx(connection);
    const auto versions = recorded_versions(tx, schema);
    for (const auto& migration : embedded_migrations()) {
        if (!versions.count(migration.name)) return false;
    }
    return true;
}

MigrationReport migrate(const StoreOptions& options, bool dry_run) {
    const auto connection = connect(options);
    return migrate(*connection, options.schema, dry_run);
}

}  // namespace hourglass::store
