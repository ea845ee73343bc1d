// The one place that decides what a failure while storing commands means (reference §4):
//  - transient: the connection, the server or the moment is at fault (connection lost, server
//    shutting down, serialization conflict, out of resources, a commit in doubt). Nothing is
//    acked; the component reconnects with backoff and the commands are tried again.
//  - about the data: PostgreSQL refused the values it was given (data exception, integrity
//    violation, a program limit such as a too deep JSON value), or they could not be encoded.
//    Tried again, the same values fail again, so the command that carries them is rejected.
//  - busy: a job's row stayed locked by another transaction (an operator's open transaction,
//    say) for longer than the store waits (lock_timeout). Not the command's fault, and not the
//    connection's: ingest applies the others and tries that one again later.
// Anything not known to be about the data counts as transient: a missing privilege or table
// must never turn every command into a rejection.
#pragma once

#include <exception>

namespace hourglass::store {

enum class FailureKind { transient, about_the_data, busy };

FailureKind classify_failure(const std::exception& failure) noexcept;

// What the CLI tells an operator: PostgreSQL could not be reached (or the connection was lost),
// or a table hourglass needs is missing (the schema was never migrated).
bool is_unreachable(const std::exception& failure) noexcept;
bool is_missing_table(const std::exception& failure) noexcept;

}  // namespace hourglass::store
