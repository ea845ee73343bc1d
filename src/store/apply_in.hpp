// Internal to src/store: what job_store.cpp shares with sql_commands.cpp, which applies the
// commands of the SQL intake in the transaction that takes them.
#pragma once

#include <pqxx/pqxx>

#include <span>
#include <vector>

#include "hourglass/command.hpp"
#include "hourglass/job.hpp"

namespace hourglass::store {

// JobStore::apply's work inside an open transaction (its statements prepared on the
// transaction's connection): outcome i belongs to command i.
std::vector<CommandOutcome> apply_in(pqxx::work& tx, std::span<const Command> commands,
                                     const InsertClaimOffer* claims);

// Prepares the SQL intake's statements (sql_commands.cpp) on a JobStore's connection.
void prepare_sql_command_statements(pqxx::connection& connection);

}  // namespace hourglass::store
