// What the SQL intake needs from the store (reference §3.4): take committed commands from
// hourglass.commands, apply them as ingest applies AMQP commands, and leave a receipt for each,
// all in one transaction. store::JobStore implements it.
#pragma once

#include <memory>

#include "store/store_options.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hourglass/command.hpp"
#include "hourglass/time.hpp"
#include "store/leader_locks.hpp"

namespace hourglass::store {

// One row of hourglass.commands as read, each value bounded: a value over its bound is not
// read at all (empty here, with its size), so a hostile row costs no more memory than that.
struct SqlCommandRow {
    std::int64_t id = 0;
    std::string routing_key;  // its first 256 characters
    std::optional<std::string> body;
    std::size_t body_bytes = 0;
    std::optional<std::string> properties;  // JSON text
    std::optional<std::string> headers;     // JSON text
    std::size_t properties_bytes = 0;
    std::size_t headers_bytes = 0;
    // The role that inserted it, written by PostgreSQL (migration 020): the command's owner.
    std::string owner;
};

struct SqlCommandLimits {
    std::size_t commands = 500;            // per transaction
    std::size_t body_bytes = 1024 * 1024;  // --max-body: a longer body is not read
    std::size_t json_bytes = 256 * 1024;   // properties or headers as JSON text
    // What one batch reads at most, bodies and JSON (the first command always): 500 commands
    // of a 1 MiB body each would otherwise be read at once.
    std::size_t batch_bytes = 16 * 1024 * 1024;
};

// What one take did: the commands and their outcomes (index for index), or nothing.
struct SqlCommandBatch {
    std::vector<Command> commands;
    std::vector<CommandOutcome> outcomes;
    // Another instance holds the intake (one takes at a time, so commands keep their order).
    bool held_elsewhere = false;
    // Commands left for the next take: their job's row is locked by another transaction.
    std::size_t waiting = 0;
    // There may be more commands to take at once (the take was full).
    bool more = false;
    // Commands whose id already had a receipt (an earlier command given that id by a role
    // allowed to choose ids): their receipt replaced it. Reported as an error.
    std::vector<std::int64_t> receipts_replaced;
};

class SqlCommandStore : public LeaderLockStore {
public:
    virtual ~SqlCommandStore() = default;
    // Takes up to limits.commands of the oldest commands (by id), turns each into a command
    // with `parse`, applies them, writes each one's receipt and deletes them, in one
    // transaction. A command PostgreSQL refuses for its data is rejected with PostgreSQL's
    // reason and the others applied; one whose job's row another transaction keeps locked stays
    // for a later take, and so do the later commands of that job.
    virtual SqlCommandBatch take_sql_commands(
        const SqlCommandLimits& limits, const std::function<Command(const SqlCommandRow&)>& parse) = 0;
    // Waits up to `timeout` for a transaction that inserted commands into this schema to commit
    // (its trigger's notification); true if one did. Notifications that came meanwhile count.
    virtual bool wait_for_commands(Milliseconds timeout) = 0;
};

// The store the SQL intake uses, over a connection of its own (throws when PostgreSQL is out of reach).
std::unique_ptr<SqlCommandStore> open_sql_command_store(const StoreOptions& options);

}  // namespace hourglass::store
