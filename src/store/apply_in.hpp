// Internal to src/store: what apply_commands.cpp shares with sql_commands.cpp, which applies the
// commands of the SQL intake in the transaction that takes them.
#pragma once

#include <pqxx/pqxx>

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hourglass/command.hpp"
#include "hourglass/job.hpp"

namespace hourglass::store {

// JobStore::apply's work inside an open transaction (its statements prepared on the
// transaction's connection): outcome i belongs to command i.
std::vector<CommandOutcome> apply_in(pqxx::work& tx, std::span<const Command> commands,
                                     const InsertClaimOffer* claims);

// Notes the commits of transactions that inserted commands into `schema` (migration 018's
// trigger notifies on one channel for every schema, with the schema as the payload).
class CommandsInserted final : public pqxx::notification_receiver {
public:
    CommandsInserted(pqxx::connection_base& connection, std::string schema)
        : pqxx::notification_receiver(connection, "hourglass_commands"), schema_(std::move(schema)) {}
    void operator()(const std::string& payload, int) override {
        if (payload == schema_) arrived_ = true;
    }
    bool take() noexcept { return std::exchange(arrived_, false); }

private:
    std::string schema_;
    bool arrived_ = false;
};

}  // namespace hourglass::store
