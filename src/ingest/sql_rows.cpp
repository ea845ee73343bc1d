// The SQL intake's rows as commands (ingest/sql_rows.hpp): pure, so that every rule is unit
// tested and fuzzed (fuzz/sql_row_fuzz.cpp) without a database.
#include "ingest/sql_rows.hpp"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/text.hpp"
#include "hourglass/properties_json.hpp"

namespace hourglass::ingest {

using nlohmann::json;

namespace {

// Thrown for a row that stands for no message; the text names the column and value at fault.
struct BadRow {
    std::string error;
};

// A plain JSON value as an AMQP field: strings, 64-bit integers, floats, booleans, null,
// arrays and tables, nested at most `depth_left` deep.
FieldValue field_of(const json& value, std::size_t depth_left, const std::string& where) {
    switch (value.type()) {
        case json::value_t::null: return Void{};
        case json::value_t::boolean: return value.get<bool>();
        case json::value_t::number_integer: return value.get<std::int64_t>();
        case json::value_t::number_unsigned: {
            const auto number = value.get<std::uint64_t>();
            if (number > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
                throw BadRow{where + ": " + std::to_string(number) + " is out of range"};
            }
            return static_cast<std::int64_t>(number);
        }
        case json::value_t::number_float: return value.get<double>();
        case json::value_t::string: return value.get<std::string>();
        case json::value_t::array:
        case json::value_t::object: {
            if (depth_left == 0) throw BadRow{where + ": nested too deeply"};
            if (value.is_array()) {
                FieldArray array;
                for (const auto& item : value) array.push_back(field_of(item, depth_left - 1, where));
                return array;
            }
            FieldTable table;
            for (const auto& [name, item] : value.items()) {
                table.emplace_back(name, field_of(item, depth_left - 1, where + "." + printable(name, 64)));
            }
            return table;
        }
        default: throw BadRow{where + ": a value of an unsupported type"};
    }
}

json parse_object(const std::optional<std::string>& text, std::size_t bytes, const char* column,
                  std::size_t max_bytes) {
    if (!text) {
        throw BadRow{std::string(column) + ": " + std::to_string(bytes) + " bytes of JSON exceed " +
                     std::to_string(max_bytes)};
    }
    auto value = json::parse(*text, nullptr, false);  // jsonb text: valid JSON
    if (!value.is_object()) throw BadRow{std::string(column) + ": not a JSON object"};
    return value;
}

std::string string_property(const json& value, const std::string& name) {
    if (!value.is_string()) throw BadRow{"properties." + name + ": not a string"};
    return value.get<std::string>();
}

std::uint64_t integer_property(const json& value, const std::string& name, std::uint64_t max) {
    if (!value.is_number_integer() || value.get<std::int64_t>() < 0 ||
        value.get<std::uint64_t>() > max) {
        throw BadRow{"properties." + name + ": not an integer from 0 to " + std::to_string(max)};
    }
    return value.get<std::uint64_t>();
}

BasicProperties properties_of(const json& object) {
    BasicProperties properties;
    using Text = std::optional<std::string> BasicProperties::*;
    static const std::pair<const char*, Text> kTexts[] = {
        {"content_type", &BasicProperties::content_type},
        {"content_encoding", &BasicProperties::content_encoding},
        {"correlation_id", &BasicProperties::correlation_id},
        {"reply_to", &BasicProperties::reply_to},
        {"expiration", &BasicProperties::expiration},
        {"message_id", &BasicProperties::message_id},
        {"type", &BasicProperties::type},
        {"user_id", &BasicProperties::user_id},
        {"app_id", &BasicProperties::app_id}};
    for (const auto& item : object.items()) {
        // Not a structured binding: clang before 16 lets no lambda capture one.
        const auto& name = item.key();
        const auto& value = item.value();
        const auto text = std::find_if(std::begin(kTexts), std::end(kTexts),
                                       [&](const auto& entry) { return name == entry.first; });
        if (text != std::end(kTexts)) {
            properties.*(text->second) = string_property(value, name);
        } else if (name == "priority") {
            properties.priority = static_cast<std::uint8_t>(integer_property(value, name, 255));
        } else if (name == "delivery_mode") {
            properties.delivery_mode = static_cast<std::uint8_t>(integer_property(value, name, 255));
        } else if (name == "timestamp") {
            properties.timestamp = integer_property(value, name, std::numeric_limits<std::int64_t>::max());
        } else if (name == "headers") {
            throw BadRow{"properties.headers: put headers in the headers column"};
        } else {
            throw BadRow{"properties: unknown property " + quote_value(name, 64)};
        }
    }
    return properties;
}

}  // namespace

std::variant<Message, std::string> message_from_sql_row(const store::SqlCommandRow& row,
                                                        const std::string& input_exchange,
                                                        const CommandLimits& limits) {
    try {
        Message message;
        message.exchange = input_exchange;
        message.routing_key = row.routing_key;
        if (!row.body) {
            return "body: " + std::to_string(row.body_bytes) + " bytes exceed --max-body (" +
                   std::to_string(limits.max_body_bytes) + " bytes)";
        }
        message.body = *row.body;
        const auto json_bytes = store::SqlCommandLimits{}.json_bytes;
        message.properties =
            properties_of(parse_object(row.properties, row.properties_bytes, "properties", json_bytes));
        // RabbitMQ lets a publisher set only its own user as user_id; here, only its own role.
        if (message.properties.user_id && *message.properties.user_id != row.owner) {
            return "properties.user_id: " + quote_value(*message.properties.user_id, 64) +
                   " is not the role that inserted the command (" + quote_value(row.owner, 64) + ")";
        }
        const auto headers = parse_object(row.headers, row.headers_bytes, "headers", json_bytes);
        if (headers.size() > limits.max_header_count) {
            return "headers: " + std::to_string(headers.size()) + " entries exceed " +
                   std::to_string(limits.max_header_count);
        }
        if (!headers.empty()) {
            auto table = std::get<FieldTable>(field_of(headers, limits.max_header_depth, "headers").value);
            message.properties.headers = std::move(table);
        }
        // What AMQP cannot carry (a short string over 255 bytes, at any depth) could be stored
        // but never published: the AMQP door never lets it in, nor does this one.
        if (auto reason = unpublishable_reason(message.properties)) return std::move(*reason);
        return message;
    } catch (const BadRow& bad) {
        return bad.error;
    }
}

Command command_from_sql_row(const store::SqlCommandRow& row, TimePoint taken_at,
                             const CommandLimits& limits, const std::string& input_exchange) {
    auto message = message_from_sql_row(row, input_exchange, limits);
    if (auto* error = std::get_if<std::string>(&message)) {
        Command rejected;
        rejected.action = Rejection{std::move(*error)};
        rejected.owner = row.owner;  // its receipt is its inserting role's to read
        return rejected;
    }
    auto& parsed = std::get<Message>(message);
    // The receipt is the row in command_receipts; there is no queue to send one to.
    remove_header(parsed.properties, header::kReplyTo);
    auto command = parse_command(parsed, taken_at, limits, generate_uuid);
    command.reply_to.reset();
    assign_owner(command, row.owner, limits.owners);
    return command;
}

}  // namespace hourglass::ingest
