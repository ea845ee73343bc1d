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
    return command;
}

json receipt_row(std::int64_t command_id, const Command& command, const CommandOutcome& outcome) {
    return {{"command_id", command_id},
            {"job_id", storable(command.id, kMaxNameBytes)},
            {"status", std::string(to_string(outcome.status))},
            {"due_at", outcome.due ? json(format_rfc3339_ms(*outcome.due)) : json(nullptr)},
            {"error", outcome.error.empty() ? json(nullptr)
                                            : json(storable(outcome.error, kMaxReceiptErrorBytes))},
            {"count", outcome.count ? json(*outcome.count) : json(nullptr)}};
}

// Writes the receipts, lists the rejections for the console and deletes the commands.
void settle(pqxx::work& tx, const std::vector<std::int64_t>& ids, const std::vector<Command>& commands,
            const std::vector<CommandOutcome>& outcomes, const std::vector<std::string>& routing_keys) {
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
    tx.exec_prepared("write_command_receipts", receipts.dump());
    if (!rejections.empty()) tx.exec_prepared("record_rejections", rejections.dump());
    tx.exec_prepared("delete_commands", deleted.dump());
}

}  // namespace

void prepare_sql_command_statements(pqxx::connection& c) {
    // One taker at a time per schema, so that the commands of a job apply in their order.
    c.prepare("sql_intake_lock",
              "SELECT pg_try_advisory_xact_lock(hashtext('hourglass.sql_intake.' || current_schema()))");
    // $1 commands at most, the oldest first (or only the command $4); a body over $2 bytes or
    // properties or headers over $3 are not read, only measured.
    c.prepare("take_commands",
              "SELECT id, left(routing_key, " + std::to_string(kRoutingKeyChars) + "), "
              "CASE WHEN octet_length(body) <= $2 THEN body END, octet_length(body), "
              "CASE WHEN octet_length(properties::text) <= $3 THEN properties::text END, "
              "octet_length(properties::text), "
              "CASE WHEN octet_length(headers::text) <= $3 THEN headers::text END, "
              "octet_length(headers::text) "
              "FROM commands WHERE ($4::bigint IS NULL OR id = $4::bigint) "
              "ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED");
    c.prepare("write_command_receipts",
              "INSERT INTO command_receipts (command_id, job_id, status, due_at, error, count) "
              "SELECT x.command_id, x.job_id, x.status, x.due_at, x.error, x.count "
              "FROM jsonb_to_recordset($1::jsonb) AS x(command_id bigint, job_id text, "
              "status text, due_at timestamptz, error text, count bigint) "
              "ON CONFLICT (command_id) DO NOTHING");
    c.prepare("delete_commands",
              "DELETE FROM commands WHERE id IN "
              "(SELECT (jsonb_array_elements_text($1::jsonb))::bigint)");
    c.prepare("oldest_command_ids", "SELECT id FROM commands ORDER BY id LIMIT $1");
}

SqlCommandBatch JobStore::take_sql_commands(const SqlCommandLimits& limits,
                                            const std::function<Command(const SqlCommandRow&)>& parse) {
    // One command, or the oldest limits.commands; an empty batch when another instance holds
    // the intake or the command is gone.
    const auto take = [&](std::optional<std::int64_t> only) {
        SqlCommandBatch batch;
        pqxx::work tx(*connection_);
        if (!tx.exec_prepared1("sql_intake_lock")[0].as<bool>()) {
            batch.held_elsewhere = true;
            return batch;
        }
        const auto rows = tx.exec_prepared("take_commands", static_cast<long>(limits.commands),
                                           static_cast<long long>(limits.body_bytes),
                                           static_cast<long long>(limits.json_bytes), only);
        std::vector<std::int64_t> ids;
        std::vector<std::string> routing_keys;
        for (const auto& row : rows) {
            const auto command = row_of(row);
            ids.push_back(command.id);
            routing_keys.push_back(command.routing_key);
            batch.commands.push_back(parse(command));
        }
        batch.more = rows.size() == limits.commands;
        if (ids.empty()) return batch;
        batch.outcomes = apply_in(tx, batch.commands, nullptr);
        settle(tx, ids, batch.commands, batch.outcomes, routing_keys);
        tx.commit();
        return batch;
    };
    try {
        return take(std::nullopt);
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
        try {
            auto one = take(id);
            if (one.held_elsewhere) {
                result.held_elsewhere = true;
                break;
            }
            for (std::size_t i = 0; i < one.commands.size(); ++i) {
                result.commands.push_back(std::move(one.commands[i]));
                result.outcomes.push_back(one.outcomes[i]);
            }
        } catch (const std::exception& failure) {
            const auto kind = classify_failure(failure);
            if (kind == FailureKind::transient) throw;
            if (kind == FailureKind::busy) {
                ++result.waiting;
                break;  // this command and every later one wait: their order is kept
            }
            // Refused for its data: rejected with PostgreSQL's reason.
            pqxx::work tx(*connection_);
            if (!tx.exec_prepared1("sql_intake_lock")[0].as<bool>()) break;
            const auto rows = tx.exec_prepared("take_commands", 1L,
                                               static_cast<long long>(limits.body_bytes),
                                               static_cast<long long>(limits.json_bytes), id);
            if (rows.empty()) continue;
            const auto row = row_of(rows[0]);
            auto command = parse(row);
            const CommandOutcome outcome{CommandStatus::rejected, std::nullopt,
                                         "PostgreSQL refused it: " +
                                             printable(failure.what(), kMaxQuotedBytes)};
            settle(tx, {id}, {command}, {outcome}, {row.routing_key});
            tx.commit();
            result.commands.push_back(std::move(command));
            result.outcomes.push_back(outcome);
        }
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
