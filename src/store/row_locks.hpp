// Internal to src/store: how writes live beside row locks that other transactions hold (an
// operator's transaction left open must hold up only the jobs whose rows it holds), and the
// conversions of the values the statements return.
#pragma once

#include <pqxx/pqxx>

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "hourglass/time.hpp"
#include "store/errors.hpp"

namespace hourglass::store {

// How long ingest's transactions and the loader's and the audit's records wait for a row lock
// another transaction holds. Their own locks last a statement; a longer one is an operator's
// (a transaction left open), which must hold up only the jobs whose rows it holds.
inline constexpr const char* kBriefRowLockWait = "SET LOCAL lock_timeout = '250ms'";

// Locks the rows of `ids` that no other transaction holds; returns the ids of those another
// transaction holds (never waiting for it). Rows that do not exist are in neither.
std::set<std::string> lock_rows_not_held_elsewhere(pqxx::work& tx, const std::set<std::string>& ids);

// Runs `record(tx, around_locks)` in a transaction, committed, and returns what it returns.
// First it waits for row locks as ingest does, at most 250 ms: the loader's and the audit's
// own locks last a statement. A row locked longer (an operator's transaction left open) must
// not stop every record behind it, so then it runs again with `around_locks`: it must take
// only the rows no other transaction holds (lock_rows_not_held_elsewhere) and leave the rest.
// Taking every row that way at once would cost a hotspot's records about a third more.
template <typename Record>
auto record_around_locks(pqxx::connection& connection, const Record& record) {
    try {
        pqxx::work tx(connection);
        tx.exec(kBriefRowLockWait);
        auto recorded = record(tx, false);
        tx.commit();
        return recorded;
    } catch (const std::exception& failure) {
        if (classify_failure(failure) != FailureKind::busy) throw;
    }
    pqxx::work tx(connection);
    tx.exec(kBriefRowLockWait);  // a guard: `around_locks` waits for no lock
    auto recorded = record(tx, true);
    tx.commit();
    return recorded;
}


// Epoch milliseconds, as the statements return times (exact: extract() is numeric on PG 14+).
inline TimePoint time_of(const pqxx::field& field) { return from_epoch_ms(field.as<std::int64_t>()); }

inline std::optional<TimePoint> optional_time_of(const pqxx::field& field) {
    if (field.is_null()) return std::nullopt;
    return time_of(field);
}

}  // namespace hourglass::store
