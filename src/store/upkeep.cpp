// The store's upkeep (StatsStore, RetentionStore): the counts and lateness of hourglass.stats,
// rejections, and retention's deletes.
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "common/text.hpp"
#include "store/job_store.hpp"
#include "store/migrations.hpp"
#include "store/row_locks.hpp"

namespace hourglass::store {

using nlohmann::json;

namespace {
constexpr int kCountFields = 8;  // the columns of stats_counts.sql, then the lateness columns

Stats counts_of(const pqxx::row& row) {
    Stats stats;
    stats.pending = row[0].as<std::int64_t>();
    stats.enqueued = row[1].as<std::int64_t>();
    stats.done = row[2].as<std::int64_t>();
    stats.cancelled = row[3].as<std::int64_t>();
    stats.oldest_pending_lag_ms = row[4].as<std::int64_t>();
    stats.next_due_at = optional_time_of(row[5]);
    stats.paused = row[6].as<std::int64_t>();
    stats.sql_commands_waiting = row[7].as<std::int64_t>();
    return stats;
}

HourLateness lateness_of(const pqxx::row& row, int first) {
    const auto optional_ms = [&](int column) {
        const auto field = row[first + column];
        return field.is_null() ? std::optional<double>{} : field.as<double>();
    };
    return {optional_ms(0), optional_ms(1), optional_ms(2)};
}
}  // namespace

Stats JobStore::stats() {
    pqxx::read_transaction tx(*connection_);
    const auto row = tx.exec_prepared1("stats", kSqlCommandsCountCap + 1);
    auto stats = counts_of(row);
    stats.lateness = lateness_of(row, kCountFields);
    return stats;
}

Stats JobStore::stats_counts() {
    pqxx::read_transaction tx(*connection_);
    return counts_of(tx.exec_prepared1("stats_counts", kSqlCommandsCountCap + 1));
}

HourLateness JobStore::stats_lateness() {
    pqxx::read_transaction tx(*connection_);
    return lateness_of(tx.exec_prepared1("stats_lateness"), 0);
}

void JobStore::record_rejections(const std::vector<RecordedRejection>& rejections) {
    if (rejections.empty()) return;
    json rows = json::array();
    for (const auto& rejection : rejections) {
        rows.push_back({{"job_id", printable(rejection.job_id, kMaxNameBytes)},
                        {"routing_key", printable(rejection.routing_key, kMaxNameBytes)},
                        {"reason", printable(rejection.reason, kMaxRejectionReasonBytes)}});
    }
    pqxx::work tx(*connection_);
    tx.exec_prepared("record_rejections", rows.dump());
    tx.commit();
}

std::size_t JobStore::prune_rejections(std::optional<Milliseconds> retention, std::size_t keep,
                                       std::size_t limit) {
    pqxx::work tx(*connection_);
    tx.exec("SET LOCAL statement_timeout = '5s'");
    tx.exec("SET LOCAL lock_timeout = '1s'");
    // No retention: only the count bounds the table (a century stands for "never").
    const auto age = retention ? retention->count() : 100LL * 365 * 86400000;
    const auto result = tx.exec_prepared("prune_rejections", static_cast<long long>(age),
                                         static_cast<long>(limit), static_cast<long>(keep));
    tx.commit();
    return static_cast<std::size_t>(result.affected_rows());
}

std::size_t JobStore::prune_receipts(Milliseconds retention, std::size_t limit) {
    pqxx::work tx(*connection_);
    tx.exec("SET LOCAL statement_timeout = '5s'");
    tx.exec("SET LOCAL lock_timeout = '1s'");
    const auto result = tx.exec_prepared("prune_receipts", static_cast<long long>(retention.count()),
                                         static_cast<long>(limit));
    tx.commit();
    return static_cast<std::size_t>(result.affected_rows());
}

bool JobStore::migrations_current() { return store::migrations_current(*connection_, schema_); }

std::int64_t JobStore::live_instances(Milliseconds silent_for) {
    pqxx::read_transaction tx(*connection_);
    return tx.exec_prepared1("live_instances", static_cast<long long>(silent_for.count()))[0]
        .as<std::int64_t>();
}

void JobStore::fold_job_counts() {
    pqxx::work tx(*connection_);
    tx.exec("SELECT fold_job_counts()");
    tx.commit();
}

std::optional<std::size_t> JobStore::prune_ended(Milliseconds retention, std::size_t limit) {
    pqxx::work tx(*connection_);
    // Bounded work per batch, and never a long wait for a lock held by ingest or a claim.
    tx.exec("SET LOCAL statement_timeout = '5s'");
    tx.exec("SET LOCAL lock_timeout = '1s'");
    const auto locked = tx.exec_prepared1("prune_lock");
    if (!locked[0].as<bool>()) return std::nullopt;
    const auto result = tx.exec_prepared("prune_ended", static_cast<long>(retention.count()),
                                         static_cast<long>(limit));
    tx.commit();
    return static_cast<std::size_t>(result.affected_rows());
}

std::int64_t JobStore::count_prunable(Milliseconds retention) {
    pqxx::read_transaction tx(*connection_);
    return tx.exec_prepared1("count_prunable", static_cast<long>(retention.count()))[0]
        .as<std::int64_t>();
}

std::vector<LeaderLockHolder> JobStore::leader_lock_holders() {
    pqxx::read_transaction tx(*connection_);
    std::vector<LeaderLockHolder> holders;
    for (const auto& row : tx.exec_prepared("leader_lock_holders")) {
        holders.push_back({.lock = row[0].as<std::string>(),
                           .transaction_id = row[1].as<std::string>(),
                           .pid = row[2].as<std::int64_t>(),
                           .role = printable(row[3].as<std::string>(), kMaxNameBytes),
                           .application = printable(row[4].as<std::string>(), kMaxNameBytes),
                           .state = row[5].as<std::string>(),
                           .open_for = row[6].is_null()
                                           ? std::nullopt
                                           : std::optional(Milliseconds(row[6].as<std::int64_t>()))});
    }
    return holders;
}

std::int64_t JobStore::table_bytes() {
    pqxx::read_transaction tx(*connection_);
    return tx.exec_prepared1("table_bytes")[0].as<std::int64_t>();
}

std::optional<TimePoint> JobStore::next_claimable_due() {
    pqxx::read_transaction tx(*connection_);
    return optional_time_of(tx.exec_prepared1("next_claimable_due")[0]);
}

}  // namespace hourglass::store
