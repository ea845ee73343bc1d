// The SQL intake's rows as commands (ingest/sql_rows.hpp): plain JSON properties and headers
// become the message an AMQP client would publish, parsed by the one parser; every hostile
// row is a rejection that names the column at fault.
#include "ingest/sql_rows.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hourglass::ingest {
namespace {

using ::testing::HasSubstr;

const TimePoint kTaken = from_epoch_ms(1795339800000);

store::SqlCommandRow row(std::string properties, std::string headers, std::string body = "payload") {
    store::SqlCommandRow row;
    row.id = 7;
    row.routing_key = "orders.remind";
    row.body_bytes = body.size();
    row.body = std::move(body);
    row.properties_bytes = properties.size();
    row.properties = std::move(properties);
    row.headers_bytes = headers.size();
    row.headers = std::move(headers);
    return row;
}

std::string rejection_of(const Command& command) {
    const auto* rejection = std::get_if<Rejection>(&command.action);
    return rejection ? rejection->error : "<not rejected>";
}

TEST(SqlIntake, a_row_becomes_the_command_its_message_would_be) {
    const auto command = command_from_sql_row(
        row(R"({"message_id": "order-42-reminder", "content_type": "application/json", "priority": 3})",
            R"({"x-delay": 60000, "tenant": "acme", "nested": {"a": [1, 2.5, true, null]}})"),
        kTaken, {}, "hourglass.in");
    const auto* schedule = std::get_if<ScheduleCommand>(&command.action);
    ASSERT_NE(schedule, nullptr) << rejection_of(command);
    EXPECT_EQ(schedule->id, "order-42-reminder");
    EXPECT_EQ(schedule->routing_key, "orders.remind");
    EXPECT_EQ(schedule->body, "payload");
    EXPECT_EQ(schedule->due_at, kTaken + std::chrono::minutes{1}) << "x-delay counts from the take";
    EXPECT_EQ(schedule->properties.content_type, "application/json");
    EXPECT_EQ(schedule->properties.priority, 3);
    EXPECT_EQ(*find_header(schedule->properties, "tenant"), FieldValue(std::string("acme")));
    const auto* nested = find_header(schedule->properties, "nested");
    ASSERT_NE(nested, nullptr);
    const auto& table = std::get<FieldTable>(nested->value);
    const auto& array = std::get<FieldArray>(table.at(0).second.value);
    EXPECT_EQ(array, (FieldArray{std::int64_t{1}, 2.5, true, Void{}}));
    EXPECT_EQ(find_header(schedule->properties, "x-delay"), nullptr) << "a control header";
}

TEST(SqlIntake, control_commands_come_through_as_well) {
    const auto cancel = command_from_sql_row(row(R"({"message_id": "j"})", R"({"x-cancel": true})"),
                                             kTaken, {}, "hourglass.in");
    EXPECT_TRUE(std::holds_alternative<CancelCommand>(cancel.action)) << rejection_of(cancel);
    const auto prefix = command_from_sql_row(row("{}", R"({"x-cancel-prefix": "orders."})"), kTaken, {},
                                             "hourglass.in");
    EXPECT_TRUE(std::holds_alternative<CancelPrefixCommand>(prefix.action)) << rejection_of(prefix);
}

TEST(SqlIntake, x_reply_to_is_dropped_since_the_receipt_is_a_row) {
    const auto command = command_from_sql_row(
        row(R"({"message_id": "j"})", R"({"x-delay": 5, "x-reply-to": "somewhere"})"), kTaken, {},
        "hourglass.in");
    ASSERT_TRUE(std::holds_alternative<ScheduleCommand>(command.action)) << rejection_of(command);
    EXPECT_FALSE(command.reply_to.has_value());
}

TEST(SqlIntake, hostile_rows_are_rejected_naming_the_column_at_fault) {
    CommandLimits limits;
    limits.max_header_depth = 3;
    const std::vector<std::pair<store::SqlCommandRow, std::string>> cases = {
        {row(R"({"bogus": 1})", R"({"x-delay": 5})"), "properties: unknown property 'bogus'"},
        {row(R"({"priority": "high"})", R"({"x-delay": 5})"), "properties.priority"},
        {row(R"({"priority": 256})", R"({"x-delay": 5})"), "properties.priority"},
        {row(R"({"message_id": 5})", R"({"x-delay": 5})"), "properties.message_id: not a string"},
        {row(R"({"headers": {}})", R"({"x-delay": 5})"), "headers column"},
        {row("[]", R"({"x-delay": 5})"), "properties: not a JSON object"},
        {row("{}", "5"), "headers: not a JSON object"},
        {row("{}", R"({"x-delay": -5})"), "x-delay"},
        {row("{}", R"({"x-delay": 5, "deep": {"a": {"b": {"c": 1}}}})"), "nested too deeply"},
        {row("{}", R"({"x-delay": 18446744073709551615})"), "out of range"},
        {row("{}", "{}"), "no time header"},
    };
    for (const auto& [hostile, expected] : cases) {
        const auto command = command_from_sql_row(hostile, kTaken, limits, "hourglass.in");
        EXPECT_THAT(rejection_of(command), HasSubstr(expected)) << *hostile.properties << " " << *hostile.headers;
    }
}

TEST(SqlIntake, values_over_their_bound_were_not_read_and_are_rejected) {
    auto big_body = row("{}", R"({"x-delay": 5})");
    big_body.body.reset();
    big_body.body_bytes = 5'000'000;
    EXPECT_THAT(rejection_of(command_from_sql_row(big_body, kTaken, {}, "hourglass.in")),
                HasSubstr("body: 5000000 bytes exceed --max-body"));
    auto big_headers = row("{}", "");
    big_headers.headers.reset();
    big_headers.headers_bytes = 9'000'000;
    EXPECT_THAT(rejection_of(command_from_sql_row(big_headers, kTaken, {}, "hourglass.in")),
                HasSubstr("headers: 9000000 bytes of JSON exceed"));
}

TEST(SqlIntake, too_many_headers_are_rejected_before_they_are_converted) {
    std::string headers = R"({"x-delay": 5)";
    for (int i = 0; i < 300; ++i) headers += ", \"h" + std::to_string(i) + "\": 1";
    headers += "}";
    EXPECT_THAT(rejection_of(command_from_sql_row(row("{}", headers), kTaken, {}, "hourglass.in")),
                HasSubstr("headers: 301 entries exceed 256"));
}

// Reference §3.5: the owner is the role PostgreSQL wrote, never a value of the row's choosing.
TEST(SqlIntake, a_command_belongs_to_the_role_that_inserted_it) {
    auto inserted = row(R"({"message_id": "j"})", R"({"x-cancel": true})");
    inserted.owner = "orders_app";
    CommandLimits limits;
    limits.owners.owner_only = true;
    limits.owners.operators = {"ops"};
    const auto command = command_from_sql_row(inserted, kTaken, limits, "hourglass.in");
    EXPECT_EQ(command.owner, "orders_app");
    EXPECT_TRUE(command.owner_only);
    inserted.owner = "ops";
    EXPECT_FALSE(command_from_sql_row(inserted, kTaken, limits, "hourglass.in").owner_only)
        << "an operator acts on every job";
    limits.owners.owner_only = false;
    inserted.owner = "orders_app";
    EXPECT_FALSE(command_from_sql_row(inserted, kTaken, limits, "hourglass.in").owner_only)
        << "--command-scope any";
}

// RabbitMQ refuses a user_id other than the publisher's; the SQL door refuses any but the
// inserting role, so that x-hourglass-user-id means the same whichever door it came through.
TEST(SqlIntake, a_user_id_other_than_the_inserting_role_is_rejected) {
    auto inserted = row(R"({"message_id": "j", "user_id": "billing"})", R"({"x-delay": 5})");
    inserted.owner = "orders_app";
    const auto forged = command_from_sql_row(inserted, kTaken, {}, "hourglass.in");
    EXPECT_THAT(rejection_of(forged),
                HasSubstr("properties.user_id: 'billing' is not the role that inserted the command"));
    EXPECT_EQ(forged.owner, "orders_app") << "its receipt is still the inserting role's";
    inserted.owner = "billing";
    const auto own = command_from_sql_row(inserted, kTaken, {}, "hourglass.in");
    const auto* schedule = std::get_if<ScheduleCommand>(&own.action);
    ASSERT_NE(schedule, nullptr) << rejection_of(own);
    EXPECT_EQ(*find_header(schedule->properties, "x-hourglass-user-id"), FieldValue(std::string("billing")));
}

// Names are the row's bytes: a reason that names them (logged, stored in the receipt and the
// console's rejections) escapes them, so that no row forges a log line.
TEST(SqlIntake, a_reason_naming_a_hostile_name_escapes_it) {
    CommandLimits limits;
    limits.max_header_depth = 1;
    const auto deep = rejection_of(command_from_sql_row(
        row("{}", R"({"x-delay": 5, "x\nINFO forged": {"y": 1}})"), kTaken, limits, "hourglass.in"));
    EXPECT_THAT(deep, HasSubstr("headers.x\\x0aINFO forged: nested too deeply"));
    const auto long_name = rejection_of(command_from_sql_row(
        row("{}", R"({"x-delay": 5, "t\nx": {")" + std::string(300, 'n') + R"(": 1}})"), kTaken, {},
        "hourglass.in"));
    EXPECT_THAT(long_name, HasSubstr("headers.t\\x0ax: a name of 300 bytes"));
    EXPECT_EQ(deep.find('\n'), std::string::npos);
    EXPECT_EQ(long_name.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace hourglass::ingest
