// libFuzzer target: every row an application can insert into hourglass.commands (reference
// §3.4). Each row gives exactly one defined outcome, never a crash or an exception: a rejection
// naming its fault, or a command whose job AMQP can carry and PostgreSQL can store, owned by
// the row's inserting role whatever the row says.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "ingest/sql_rows.hpp"
#include "store/job_rows.hpp"

namespace {

using nlohmann::json;

// The names hourglass reads in each column: most generated keys are one of them, so that rows
// get past "unknown property" to the parser's own checks.
const std::vector<std::string> kPropertyNames = {
    "message_id", "user_id", "content_type", "priority", "delivery_mode", "timestamp",
    "expiration", "correlation_id", "app_id", "headers"};
const std::vector<std::string> kHeaderNames = {
    "x-delay", "x-schedule-at", "x-cron", "x-cron-tz", "x-cancel", "x-replace", "x-pause",
    "x-cancel-prefix", "x-reply-to", "x-hourglass-exchange", "x-hourglass-expires-after",
    "x-hourglass-user-id"};

// A JSON value as jsonb holds it (valid UTF-8 text once dumped), an object when `names` are
// given (keys mostly from them).
json make_json(FuzzedDataProvider& in, int depth, const std::vector<std::string>* names = nullptr) {
    switch (names ? 7 : in.ConsumeIntegralInRange<int>(0, depth > 4 ? 5 : 7)) {
        case 0: return nullptr;
        case 1: return in.ConsumeBool();
        case 2:  // as often a delay, a priority or a count as any 64-bit value
            return in.ConsumeBool() ? in.ConsumeIntegralInRange<std::int64_t>(-10, 100000)
                                    : in.ConsumeIntegral<std::int64_t>();
        case 3: return in.ConsumeIntegral<std::uint64_t>();
        case 4: return in.ConsumeFloatingPoint<double>();
        case 5: return in.ConsumeRandomLengthString(300);
        case 6: {
            json array = json::array();
            for (int i = in.ConsumeIntegralInRange<int>(0, 4); i > 0; --i) {
                array.push_back(make_json(in, depth + 1));
            }
            return array;
        }
        default: {
            json result = json::object();
            for (int i = in.ConsumeIntegralInRange<int>(0, 6); i > 0; --i) {
                const bool known = names && in.ConsumeIntegralInRange<int>(0, 9) > 0;
                const auto name =
                    known ? (*names)[in.ConsumeIntegralInRange<std::size_t>(0, names->size() - 1)]
                          : in.ConsumeRandomLengthString(300);
                result[name] = make_json(in, depth + 1);
            }
            return result;
        }
    }
}

// A column's value: almost always an object, as jsonb rows hold.
json make_column(FuzzedDataProvider& in, const std::vector<std::string>& names) {
    return in.ConsumeIntegralInRange<int>(0, 9) > 0 ? make_json(in, 0, &names) : make_json(in, 0);
}

// jsonb's text: invalid UTF-8 never reaches it (PostgreSQL refuses it), so it is replaced.
std::string as_jsonb_text(const json& value) {
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace hourglass;
    FuzzedDataProvider in(data, size);
    store::SqlCommandRow row;
    row.id = in.ConsumeIntegral<std::int64_t>();
    row.routing_key = in.ConsumeRandomLengthString(300);
    // A role name: PostgreSQL's identifiers, printable here.
    for (const char c : in.ConsumeRandomLengthString(63)) {
        if (c > ' ' && c < 127) row.owner.push_back(c);
    }
    if (in.ConsumeBool()) {
        row.body = in.ConsumeRandomLengthString(2000);
        row.body_bytes = row.body->size();
    } else {
        row.body_bytes = in.ConsumeIntegral<std::uint32_t>();  // over --max-body: measured only
    }
    const auto properties = as_jsonb_text(make_column(in, kPropertyNames));
    auto header_table = make_column(in, kHeaderNames);
    // Half the rows are schedules in the making, so that accepted jobs are common.
    if (header_table.is_object() && in.ConsumeBool()) {
        header_table["x-delay"] = in.ConsumeIntegralInRange<std::int64_t>(0, 100000);
    }
    const auto headers = as_jsonb_text(header_table);
    row.properties_bytes = properties.size();
    row.headers_bytes = headers.size();
    if (in.ConsumeIntegralInRange<int>(0, 9) > 0) row.properties = properties;
    if (in.ConsumeIntegralInRange<int>(0, 9) > 0) row.headers = headers;

    CommandLimits limits;
    limits.max_body_bytes = 1000;
    limits.max_header_count = 8;
    limits.owners.owner_only = in.ConsumeBool();
    const auto taken_at = from_epoch_ms(in.ConsumeIntegralInRange<std::int64_t>(0, 4102444800000));
    const auto command = ingest::command_from_sql_row(row, taken_at, limits, "hourglass.in");

    if (command.owner != row.owner) std::abort();  // the role, never a value of the row's
    if (command.reply_to) std::abort();            // the receipt is a row
    if (const auto* rejection = std::get_if<Rejection>(&command.action)) {
        if (rejection->error.empty()) std::abort();
    }
    if (const auto* job = std::get_if<ScheduleCommand>(&command.action)) {
        if (unpublishable_reason(job->properties)) std::abort();  // AMQP could not carry it
        if (job->properties.user_id || job->body.size() > limits.max_body_bytes) std::abort();
        // A user_id reaches consumers only as the inserting role (x-hourglass-user-id).
        const auto* user = find_header(job->properties, "x-hourglass-user-id");
        if (user && *user != FieldValue(row.owner)) std::abort();
        // What the store sends: strict dump, invalid UTF-8 throws (and fails the target).
        (void)store::job_row(*job, command.owner).dump();
    }
    return 0;
}
