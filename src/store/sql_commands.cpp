// The SQL intake's side of the store (reference §3.4): JobStore::take_sql_commands.
#include <nlohmann/json.hpp>


#include "common/text.hpp"
#include "hourglass/properties_json.hpp"
#include "store/apply_in.hpp"
#include "store/errors.hpp"
#include "store/job_store.hpp"

namespace hourglass::store {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxReceiptErrorBytes = 1000;
// Characters of a routing key read: more than a name may hold in bytes, so a longer key is
// still rejected as too long, and a hostile one costs no more.
constexpr int kRoutingKeyChars = 256;

// Text PostgreSQL stores: as it is if it is valid UTF-8, else escaped like a log line.
std::string storable(const std::string& text, std::size_t max_bytes) {
    if (text.size() <= max_bytes && is_storable_text(text)) return text;
    return printable(text, max_bytes);
}

SqlCommandRow row_of(const pqxx::row& row) {
    SqlCommandRow command;
    command.id = row[0].as<std::int64_t>();
    command.routing_key = row[1].as<std::string>();
    if (!row[2].is_null()) command.body = pqxx::binarystring(row[2]).str();
    command.body_bytes = row[3].as<std::size_t>();
    if (!row[4].is_null()) command.properties = row[4].as<std::string>();
    command.properties_bytes = row[5].as<std::size_t>();
    if (!row[6].is_null()) command.headers = row[6].as<std::string>();
    command.headers_bytes = row[7].as<std::size_t>();
    command.owner = row[9].as<std::string>();
    return command;
}

json receipt_row(std::int64_t command_id, const Command& command, const CommandOutcome& outcome) {
    return {{"command_id", command_id},
            {"job_id", storable(command.id, kMaxNameBytes)},
            {"status", std::string(to_string(outcome.status))},
            {"due_at", outcome.due ? json(format_rfc3339_ms(*outcome.due)) : json(nullptr)},
            {"error", outcome.error.empty() ? json(nullptr)
                                            : json(storable(outcome.error, kMaxReceiptErrorBytes))},
            {"count", outcome.count ? json(*outcome.count) : json(nullptr)},
            {"owner", command.owner}};
}

// Writes the receipts, lists the rejections for the console and deletes the commands; returns
// the ids whose receipt replaced one already there.
std::vector<std::int64_t> settle(pqxx::work& tx, const std::vector<std::int64_t>& ids,
                                 const std::vector<Command>& commands,
                                 const std::vector<CommandOutcome>& outcomes,
                                 const std::vector<std::string>& routing_keys) {
    json receipts = json::array();
    json rejections = json::array();
    json deleted = json::array();
    for (std::size_t i = 0; i < ids.size(); ++i) {
        receipts.push_back(receipt_row(ids[i], commands[i], outcomes[i]));
        deleted.push_back(ids[i]);
        if (outcomes[i].status == CommandStatus::rejected) {
            rejections.push_back({{"job_id", printable(commands[i].id, kMaxNameBytes)},
                                  {"routing_key", printable(routing_keys[i], kMaxNameBytes)},
                                  {"reason", printable(outcomes[i].error, kMaxRejectionReasonBytes)}});
        }
    }
    std::vector<std::int64_t> replaced;
    for (const auto& row : tx.exec_prepared("write_command_receipts", receipts.dump())) {
        if (row[1].as<bool>()) replaced.push_back(row[0].as<std::int64_t>());
    }
    if (!rejections.empty()) tx.exec_prepared("record_rejections", rejections.dump());
    tx.exec_prepared("delete_commands", deleted.dump());
    return replaced;
}

// The oldest `count` commands (or only the command `only`), locked; the caller holds the intake.
pqxx::result take_rows(pqxx::work& tx, const SqlCommandLimits& limits, std::size_t count,
                       std::optional<std::int64_t> only) {
    return tx.exec_prepared("take_commands", static_cast<long>(count),
                            static_cast<long long>(limits.body_bytes),
                            static_cast<long long>(limits.json_bytes), only,
                            static_cast<long>(kRoutingKeyChars),
                            static_cast<long long>(limits.batch_bytes));
}

using ParseRow = std::function<Command(const SqlCommandRow&)>;

// One command, or the oldest limits.commands, applied and settled in one transaction; an
// empty batch when another instance holds the intake or the command is gone.
SqlCommandBatch take_batch(pqxx::connection& connection, const SqlCommandLimits& limits,
                           const ParseRow& parse, std::optional<std::int64_t> only) {
    SqlCommandBatch batch;
    pqxx::work tx(connection);
    if (!tx.exec_prepared1("sql_intake_lock")[0].as<bool>()) {
        batch.held_elsewhere = true;
        return batch;
    }
    const auto rows = take_rows(tx, limits, only ? 1 : limits.commands, only);
    std::vector<std::int64_t> ids;
    std::vector<std::string> routing_keys;
    for (const auto& row : rows) {
        const auto command = row_of(row);
        ids.push_back(command.id);
        routing_keys.push_back(command.routing_key);
        batch.commands.push_back(parse(command));
    }
    // Cut short by the count, or by the byte budget while more candidates wait.
    batch.more = rows.size() == limits.commands ||
                 (!rows.empty() && rows[0][8].as<std::size_t>() > rows.size());
    if (ids.empty()) return batch;
    batch.outcomes = apply_in(tx, batch.commands, nullptr);
    batch.receipts_replaced = settle(tx, ids, batch.commands, batch.outcomes, routing_keys);
    tx.commit();
    return batch;
}

// The command `id`, whose data PostgreSQL refused (`failure`), rejected with that reason; the
// batch it was taken in, or an empty one if the intake is held elsewhere or the command gone.
SqlCommandBatch reject_refused(pqxx::connection& connection, const SqlCommandLimits& limits,
                               const ParseRow& parse, std::int64_t id,
                               const std::exception& failure) {
    SqlCommandBatch batch;
    pqxx::work tx(connection);
    if (!tx.exec_prepared1("sql_intake_lock")[0].as<bool>()) {
        batch.held_elsewhere = true;
        return batch;
    }
    const auto rows = take_rows(tx, limits, 1, id);
    if (rows.empty()) return batch;
    const auto row = row_of(rows[0]);
    batch.commands.push_back(parse(row));
    batch.outcomes.push_back({CommandStatus::rejected, std::nullopt,
                              "PostgreSQL refused it: " + printable(failure.what(), kMaxQuotedBytes)});
    batch.receipts_replaced = settle(tx, {id}, batch.commands, batch.outcomes, {row.routing_key});
    tx.commit();
    return batch;
}

void append(SqlCommandBatch& to, SqlCommandBatch&& from) {
    for (std::size_t i = 0; i < from.commands.size(); ++i) {
        to.commands.push_back(std::move(from.commands[i]));
        to.outcomes.push_back(from.outcomes[i]);
    }
    to.receipts_replaced.insert(to.receipts_replaced.end(), from.receipts_replaced.begin(),
                                from.receipts_replaced.end());
}

}  // namespace

SqlCommandBatch JobStore::take_sql_commands(const SqlCommandLimits& limits, const ParseRow& parse) {
    try {
        return take_batch(*connection_, limits, parse, std::nullopt);
    } catch (const std::exception& failure) {
        if (classify_failure(failure) == FailureKind::transient) throw;
    }
    // A command of the batch is at fault (PostgreSQL refused its data, or its job's row is
    // locked): one at a time, so that the others go on.
    std::vector<std::int64_t> ids;
    {
        pqxx::read_transaction tx(*connection_);
        for (const auto& row : tx.exec_prepared("oldest_command_ids", static_cast<long>(limits.commands))) {
            ids.push_back(row[0].as<std::int64_t>());
        }
    }
    SqlCommandBatch result;
    result.more = ids.size() == limits.commands;
    for (const auto id : ids) {
        SqlCommandBatch one;
        try {
            one = take_batch(*connection_, limits, parse, id);
        } catch (const std::exception& failure) {
            const auto kind = classify_failure(failure);
            if (kind == FailureKind::transient) throw;
            if (kind == FailureKind::busy) {
                ++result.waiting;
                break;  // this command and every later one wait: their order is kept
            }
            one = reject_refused(*connection_, limits, parse, id, failure);
        }
        if (one.held_elsewhere) {
            result.held_elsewhere = true;
            break;
        }
        append(result, std::move(one));
    }
    return result;
}

bool JobStore::wait_for_commands(Milliseconds timeout) {
    if (!commands_inserted_) commands_inserted_ = std::make_unique<CommandsInserted>(*connection_, schema_);
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!commands_inserted_->take()) {
        const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
            until - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        connection_->await_notification(left.count() / 1000000, left.count() % 1000000);
    }
    return true;
}

}  // namespace hourglass::store
