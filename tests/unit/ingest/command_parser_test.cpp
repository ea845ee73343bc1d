// Commands on hourglass.in (reference §3): every outcome of parse_command, the properties a job is
// released with (reference §3.1, §7) and the JSON receipt (reference §4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hourglass/command.hpp"

namespace hourglass {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// 2026-11-22T09:30:00.000Z: when hourglass received the command.
const TimePoint kReceived = from_epoch_ms(1795339800000);

Message command(FieldTable headers, std::optional<std::string> message_id = "job-1") {
    Message message;
    message.exchange = "hourglass.in";
    message.routing_key = "orders.created";
    message.body = "payload";
    message.properties.message_id = std::move(message_id);
    if (!headers.empty()) message.properties.headers = std::move(headers);
    return message;
}

Message delayed(FieldValue delay) { return command({{"x-delay", std::move(delay)}}); }

struct Parsed {
    Command command;
    int ids_generated = 0;
};

Parsed parse_counting(const Message& message, const CommandLimits& limits = {}) {
    Parsed parsed;
    int calls = 0;
    parsed.command = parse_command(message, kReceived, limits, [&calls] {
        ++calls;
        return "generated-" + std::to_string(calls);
    });
    parsed.ids_generated = calls;
    return parsed;
}

Command parse(const Message& message, const CommandLimits& limits = {}) {
    return parse_counting(message, limits).command;
}

const ScheduleCommand* schedule_of(const Command& c) {
    return std::get_if<ScheduleCommand>(&c.action);
}

// The rejection text, or a marker that makes HasSubstr matchers fail with a readable message.
std::string rejection_of(const Command& c) {
    if (const auto* rejection = std::get_if<Rejection>(&c.action)) return rejection->error;
    return "<not rejected>";
}

std::string outcome_of(const Command& c) {
    if (std::holds_alternative<ScheduleCommand>(c.action)) return "schedule";
    if (std::holds_alternative<CancelCommand>(c.action)) return "cancel";
    return "rejected: " + rejection_of(c);
}

#define ASSERT_SCHEDULED(cmd) \
    ASSERT_NE(schedule_of(cmd), nullptr) << outcome_of(cmd)

#define ASSERT_REJECTED(cmd) \
    ASSERT_TRUE(std::holds_alternative<Rejection>((cmd).action)) << outcome_of(cmd)

std::int64_t due_offset_ms(const Command& c) {
    return to_epoch_ms(schedule_of(c)->due_at) - to_epoch_ms(kReceived);
}

CommandLimits with_cron(std::function<std::variant<TimePoint, std::string>(const CronSpec&,
                                                                           TimePoint)>
                            first_run) {
    CommandLimits limits;
    limits.first_cron_run = std::move(first_run);
    return limits;
}

// A first_cron_run stub: the first run is one minute after `after`.
CommandLimits with_stub_cron() {
    return with_cron([](const CronSpec&, TimePoint after) -> std::variant<TimePoint, std::string> {
        return after + std::chrono::minutes{1};
    });
}

// --- to_string --------------------------------------------------------------------------------

TEST(CommandStatusToString, every_status_has_its_spec_name) {
    EXPECT_EQ(to_string(CommandStatus::scheduled), "scheduled");
    EXPECT_EQ(to_string(CommandStatus::duplicate), "duplicate");
    EXPECT_EQ(to_string(CommandStatus::replaced), "replaced");
    EXPECT_EQ(to_string(CommandStatus::cancelled), "cancelled");
    EXPECT_EQ(to_string(CommandStatus::too_late), "too_late");
    EXPECT_EQ(to_string(CommandStatus::not_found), "not_found");
    EXPECT_EQ(to_string(CommandStatus::rejected), "rejected");
}

// --- x-delay --------------------------------------------------------------------------------

TEST(ParseCommand, delay_of_every_integer_amqp_type_is_added_to_the_receive_time) {
    const std::vector<std::pair<FieldValue, std::int64_t>> cases = {
        {std::int8_t{127}, 127},
        {std::uint8_t{255}, 255},
        {std::int16_t{32767}, 32767},
        {std::uint16_t{65535}, 65535},
        {std::int32_t{1500}, 1500},
        {std::uint32_t{4294967295u}, 4294967295},
        {std::int64_t{86400000}, 86400000},
        {std::uint64_t{2500}, 2500},
    };
    for (const auto& [value, expected] : cases) {
        SCOPED_TRACE(expected);
        const auto c = parse(delayed(value));
        ASSERT_SCHEDULED(c);
        EXPECT_EQ(due_offset_ms(c), expected);
        EXPECT_EQ(schedule_of(c)->accepted_at, kReceived);
    }
}

TEST(ParseCommand, zero_delay_is_due_at_the_receive_time) {
    const auto c = parse(delayed(std::int32_t{0}));
    ASSERT_SCHEDULED(c);
    EXPECT_EQ(schedule_of(c)->due_at, kReceived);
}

TEST(ParseCommand, delay_as_numeric_string_is_accepted) {
    const auto c = parse(delayed(std::string("1500")));
    ASSERT_SCHEDULED(c);
    EXPECT_EQ(due_offset_ms(c), 1500);
}

TEST(ParseCommand, delay_as_integral_double_or_float_is_accepted) {
    const auto d = parse(delayed(2500.0));
    ASSERT_SCHEDULED(d);
    EXPECT_EQ(due_offset_ms(d), 2500);
    const auto f = parse(delayed(250.0f));
    ASSERT_SCHEDULED(f);
    EXPECT_EQ(due_offset_ms(f), 250);
}

TEST(ParseCommand, fractional_delay_is_rejected_naming_the_header) {
    const auto c = parse(delayed(1.5));
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c), AllOf(HasSubstr("x-delay"), HasSubstr("1.5")));
}

TEST(ParseCommand, non_finite_delay_is_rejected) {
    for (const double value : {std::nan(""), std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity()}) {
        SCOPED_TRACE(value);
        const auto c = parse(delayed(value));
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), HasSubstr("x-delay"));
    }
}

TEST(ParseCommand, negative_delay_is_rejected_naming_the_header_and_value) {
    const std::vector<FieldValue> negatives = {std::int8_t{-5}, std::int16_t{-5}, std::int32_t{-5},
                                               std::int64_t{-5}, std::string("-5"), -5.0};
    for (const auto& value : negatives) {
        const auto c = parse(delayed(value));
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), AllOf(HasSubstr("x-delay"), HasSubstr("-5")));
    }
}

TEST(ParseCommand, non_numeric_delay_string_is_rejected_naming_the_value) {
    for (const std::string text : {"abc", "", "15 00", " 1500", "1500ms", "+1500", "1.5e3", "0x10"}) {
        SCOPED_TRACE(text);
        const auto c = parse(delayed(text));
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), AllOf(HasSubstr("x-delay"), HasSubstr("'" + text + "'")));
    }
}

TEST(ParseCommand, bool_delay_is_rejected) {
    const auto c = parse(delayed(true));
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c), AllOf(HasSubstr("x-delay"), HasSubstr("true")));
}

TEST(ParseCommand, delay_of_non_numeric_types_is_rejected) {
    const std::vector<FieldValue> values = {Void{}, Timestamp{5}, ByteArray{"5"}, Decimal{0, 5},
                                            FieldArray{std::int32_t{5}},
                                            FieldTable{{"v", std::int32_t{5}}}};
    for (const auto& value : values) {
        const auto c = parse(delayed(value));
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), HasSubstr("x-delay"));
    }
}

TEST(ParseCommand, u64_delay_beyond_i64_is_rejected) {
    const auto c = parse(delayed(std::numeric_limits<std::uint64_t>::max()));
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c), HasSubstr("x-delay"));
}

TEST(ParseCommand, delay_over_max_delay_is_rejected_and_at_max_delay_accepted) {
    CommandLimits limits;
    limits.max_delay = Milliseconds{60000};
    const auto at = parse(delayed(std::int32_t{60000}), limits);
    ASSERT_SCHEDULED(at);
    EXPECT_EQ(due_offset_ms(at), 60000);
    const auto over = parse(delayed(std::int32_t{60001}), limits);
    ASSERT_REJECTED(over);
    EXPECT_THAT(rejection_of(over),
                AllOf(HasSubstr("x-delay"), HasSubstr("60001"), HasSubstr("--max-delay")));
}

TEST(ParseCommand, default_max_delay_is_3650_days) {
    const std::int64_t days = 3650LL * 86400000LL;
    const auto at = parse(delayed(std::int64_t{days}));
    ASSERT_SCHEDULED(at);
    EXPECT_EQ(due_offset_ms(at), days);
    ASSERT_REJECTED(parse(delayed(std::int64_t{days + 1})));
}

// --- x-schedule-at --------------------------------------------------------------------------

Message scheduled_at(FieldValue at) { return command({{"x-schedule-at", std::move(at)}}); }

TEST(ParseCommand, schedule_at_rfc3339_with_offset_is_converted_to_utc) {
    const auto c = parse(scheduled_at(std::string("2026-11-22T11:30:00.250+01:00")));
    ASSERT_SCHEDULED(c);
    // 11:30:00.250+01:00 = 10:30:00.250Z = received + 1 h 250 ms.
    EXPECT_EQ(to_epoch_ms(schedule_of(c)->due_at), 1795339800000 + 3600000 + 250);
    EXPECT_EQ(schedule_of(c)->accepted_at, kReceived);
}

TEST(ParseCommand, schedule_at_epoch_milliseconds_integer) {
    const std::vector<FieldValue> values = {std::int64_t{1795343400250},
                                            std::uint64_t{1795343400250}, 1795343400250.0};
    for (const auto& value : values) {
        const auto c = parse(scheduled_at(value));
        ASSERT_SCHEDULED(c);
        EXPECT_EQ(to_epoch_ms(schedule_of(c)->due_at), 1795343400250);
    }
}

TEST(ParseCommand, schedule_at_epoch_milliseconds_numeric_string) {
    const auto c = parse(scheduled_at(std::string("1795343400250")));
    ASSERT_SCHEDULED(c);
    EXPECT_EQ(to_epoch_ms(schedule_of(c)->due_at), 1795343400250);
}

TEST(ParseCommand, schedule_at_amqp_timestamp_is_in_seconds) {
    const auto c = parse(scheduled_at(Timestamp{1795343400}));
    ASSERT_SCHEDULED(c);
    EXPECT_EQ(to_epoch_ms(schedule_of(c)->due_at), 1795343400000);
}

TEST(ParseCommand, schedule_at_garbage_is_rejected_naming_header_and_value) {
    for (const std::string text : {"tomorrow", "2026-11-22T09:30:00", "2026-13-01T00:00:00Z", "",
                                   "-1795343400250", "1795343400250.5"}) {
        SCOPED_TRACE(text);
        const auto c = parse(scheduled_at(text));
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c),
                    AllOf(HasSubstr("x-schedule-at"), HasSubstr("'" + text + "'")));
    }
}

TEST(ParseCommand, schedule_at_of_wrong_type_is_rejected) {
    const std::vector<FieldValue> values = {true, Void{}, 1.5, ByteArray{"2026-11-22T09:30:00Z"},
                                            FieldTable{}};
    for (const auto& value : values) {
        const auto c = parse(scheduled_at(value));
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), HasSubstr("x-schedule-at"));
    }
}

TEST(ParseCommand, schedule_at_in_the_past_is_accepted_keeping_the_given_due_time) {
    const auto rfc = parse(scheduled_at(std::string("2020-01-01T00:00:00Z")));
    ASSERT_SCHEDULED(rfc);
    EXPECT_EQ(to_epoch_ms(schedule_of(rfc)->due_at), 1577836800000);
    EXPECT_EQ(schedule_of(rfc)->accepted_at, kReceived);

    const auto epoch = parse(scheduled_at(std::int64_t{1577836800000}));
    ASSERT_SCHEDULED(epoch);
    EXPECT_EQ(to_epoch_ms(schedule_of(epoch)->due_at), 1577836800000);
}

// --- x-opt-delivery-time (RabbitMQ 4.4 quorum queues) ------------------------------------------
Message delivery_time(FieldValue at) { return command({{"x-opt-delivery-time", std::move(at)}}); }

TEST(ParseCommand, delivery_time_as_a_long_in_ms_or_an_amqp_timestamp_is_the_due_time) {
    const auto as_long = parse(delivery_time(std::int64_t{1795343400250}));
    ASSERT_SCHEDULED(as_long);
    EXPECT_EQ(to_epoch_ms(schedule_of(as_long)->due_at), 1795343400250);
    const auto as_timestamp = parse(delivery_time(Timestamp{1795343400}));
    ASSERT_SCHEDULED(as_timestamp);
    EXPECT_EQ(to_epoch_ms(schedule_of(as_timestamp)->due_at), 1795343400000);
    // Removed from the released message, as every time header.
    EXPECT_EQ(find_header(schedule_of(as_long)->properties, "x-opt-delivery-time"), nullptr);
}

TEST(ParseCommand, delivery_time_has_the_bounds_and_errors_of_schedule_at_naming_its_header) {
    CommandLimits limits;
    limits.max_delay = std::chrono::hours{1};
    const auto too_far = parse(delivery_time(std::int64_t{1795339800000 + 3600001}), limits);
    ASSERT_REJECTED(too_far);
    EXPECT_THAT(rejection_of(too_far), AllOf(HasSubstr("x-opt-delivery-time"), HasSubstr("--max-delay")));
    for (const FieldValue& bad : {FieldValue{true}, FieldValue{std::string("tomorrow")},
                                  FieldValue{std::int64_t{-1}}}) {
        const auto c = parse(delivery_time(bad));
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), HasSubstr("x-opt-delivery-time"));
    }
    auto both = delivery_time(std::int64_t{1795343400250});
    set_header(both.properties, "x-delay", std::int64_t{1000});
    const auto two = parse(both);
    ASSERT_REJECTED(two);
    EXPECT_THAT(rejection_of(two), AllOf(HasSubstr("x-delay and x-opt-delivery-time"),
                                         HasSubstr("exactly one time header")));
}

// --- x-hourglass-expires-after --------------------------------------------------------------
TEST(ParseCommand, expires_after_takes_a_duration_or_whole_milliseconds_and_is_not_released) {
    for (const auto& [value, expected] : std::vector<std::pair<FieldValue, std::int64_t>>{
             {std::string("30s"), 30000}, {std::string("250ms"), 250}, {std::int64_t{1500}, 1500}}) {
        auto message = command({{"x-delay", std::int64_t{1000}}});
        set_header(message.properties, "x-hourglass-expires-after", value);
        const auto c = parse(message);
        ASSERT_SCHEDULED(c);
        ASSERT_TRUE(schedule_of(c)->expires_after);
        EXPECT_EQ(schedule_of(c)->expires_after->count(), expected);
        EXPECT_EQ(find_header(schedule_of(c)->properties, "x-hourglass-expires-after"), nullptr);
    }
    const auto without = parse(command({{"x-delay", std::int64_t{1000}}}));
    ASSERT_SCHEDULED(without);
    EXPECT_FALSE(schedule_of(without)->expires_after);
}

TEST(ParseCommand, a_bad_expires_after_is_rejected_naming_the_header) {
    CommandLimits limits;
    limits.max_delay = std::chrono::hours{1};
    for (const FieldValue& bad : {FieldValue{std::string("soon")}, FieldValue{std::string("30")},
                                  FieldValue{std::int64_t{0}}, FieldValue{std::int64_t{-5}},
                                  FieldValue{std::string("2h")}, FieldValue{true}}) {
        auto message = command({{"x-delay", std::int64_t{1000}}});
        set_header(message.properties, "x-hourglass-expires-after", bad);
        const auto c = parse(message, limits);
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), HasSubstr("x-hourglass-expires-after"));
    }
}

TEST(ParseCommand, schedule_at_beyond_max_delay_is_rejected) {
    CommandLimits limits;
    limits.max_delay = Milliseconds{3600000};
    const auto at = parse(scheduled_at(std::int64_t{1795339800000 + 3600000}), limits);
    ASSERT_SCHEDULED(at);
    const auto over = parse(scheduled_at(std::string("2026-11-22T10:30:00.001Z")), limits);
    ASSERT_REJECTED(over);
    EXPECT_THAT(rejection_of(over), AllOf(HasSubstr("x-schedule-at"), HasSubstr("--max-delay")));
}

// --- time header count ----------------------------------------------------------------------

TEST(ParseCommand, command_without_time_header_is_rejected) {
    for (const auto& message : {command({}), command({{"custom", std::int32_t{1}}})}) {
        const auto c = parse(message);
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), AllOf(HasSubstr("x-delay"), HasSubstr("x-schedule-at"),
                                           HasSubstr("x-cron")));
    }
}

TEST(ParseCommand, two_time_headers_are_rejected_naming_both) {
    const auto c = parse(command({{"x-delay", std::int32_t{5}},
                                  {"x-schedule-at", std::string("2026-11-22T09:30:00Z")}}));
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c),
                AllOf(HasSubstr("x-delay"), HasSubstr("x-schedule-at"), Not(HasSubstr("x-cron"))));

    const auto d = parse(command({{"x-cron", std::string("* * * * *")}, {"x-delay", std::int32_t{5}}}),
                         with_stub_cron());
    ASSERT_REJECTED(d);
    EXPECT_THAT(rejection_of(d), AllOf(HasSubstr("x-delay"), HasSubstr("x-cron"),
                                       Not(HasSubstr("x-schedule-at"))));
}

TEST(ParseCommand, three_time_headers_are_rejected_naming_all) {
    const auto c = parse(command({{"x-delay", std::int32_t{5}},
                                  {"x-schedule-at", std::string("2026-11-22T09:30:00Z")},
                                  {"x-cron", std::string("* * * * *")}}),
                         with_stub_cron());
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c),
                AllOf(HasSubstr("x-delay"), HasSubstr("x-schedule-at"), HasSubstr("x-cron")));
}

// --- x-cron ---------------------------------------------------------------------------------

TEST(ParseCommand, cron_options_without_cron_are_rejected_naming_the_header) {
    const std::vector<std::pair<std::string, FieldValue>> options = {
        {"x-cron-tz", std::string("Europe/Paris")},
        {"x-cron-until", std::string("2027-01-01T00:00:00Z")},
        {"x-cron-limit", std::int32_t{3}}};
    for (const auto& [name, value] : options) {
        SCOPED_TRACE(name);
        const auto c = parse(command({{"x-delay", std::int32_t{5}}, {name, value}}),
                             with_stub_cron());
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), HasSubstr(name));
    }
}

TEST(ParseCommand, cron_without_first_cron_run_is_rejected) {
    const auto c = parse(command({{"x-cron", std::string("*/5 * * * *")}}));
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c), HasSubstr("x-cron"));
}

TEST(ParseCommand, cron_with_options_is_scheduled_at_the_first_run) {
    std::optional<CronSpec> seen;
    std::optional<TimePoint> seen_after;
    const auto limits = with_cron([&](const CronSpec& spec, TimePoint after)
                                      -> std::variant<TimePoint, std::string> {
        seen = spec;
        seen_after = after;
        return after + std::chrono::minutes{5};
    });
    const auto c = parse(command({{"x-cron", std::string("*/5 * * * *")},
                                  {"x-cron-tz", std::string("Europe/Paris")},
                                  {"x-cron-until", std::string("2027-01-01T01:00:00+01:00")},
                                  {"x-cron-limit", std::int32_t{3}}}),
                         limits);
    ASSERT_SCHEDULED(c);
    const auto& schedule = *schedule_of(c);
    EXPECT_EQ(schedule.due_at, kReceived + std::chrono::minutes{5});
    ASSERT_TRUE(schedule.cron.has_value());
    EXPECT_EQ(schedule.cron->expression, "*/5 * * * *");
    EXPECT_EQ(schedule.cron->zone, "Europe/Paris");
    EXPECT_EQ(schedule.cron->until, parse_rfc3339("2027-01-01T00:00:00Z"));
    EXPECT_EQ(schedule.cron->limit, 3);
    ASSERT_TRUE(seen.has_value());
    EXPECT_EQ(seen->expression, "*/5 * * * *");
    EXPECT_EQ(seen->zone, "Europe/Paris");
    EXPECT_EQ(seen_after, kReceived);
}

TEST(ParseCommand, cron_defaults_to_utc_without_until_or_limit) {
    const auto c = parse(command({{"x-cron", std::string("@hourly")}}), with_stub_cron());
    ASSERT_SCHEDULED(c);
    const auto& cron = schedule_of(c)->cron;
    ASSERT_TRUE(cron.has_value());
    EXPECT_EQ(cron->expression, "@hourly");
    EXPECT_EQ(cron->zone, "UTC");
    EXPECT_EQ(cron->until, std::nullopt);
    EXPECT_EQ(cron->limit, std::nullopt);
}

TEST(ParseCommand, one_shot_schedule_has_no_cron_spec) {
    const auto c = parse(delayed(std::int32_t{5}));
    ASSERT_SCHEDULED(c);
    EXPECT_FALSE(schedule_of(c)->cron.has_value());
}

TEST(ParseCommand, cron_limit_as_numeric_string_is_accepted) {
    const auto c = parse(command({{"x-cron", std::string("@daily")}, {"x-cron-limit", std::string("7")}}),
                         with_stub_cron());
    ASSERT_SCHEDULED(c);
    EXPECT_EQ(schedule_of(c)->cron->limit, 7);
}

TEST(ParseCommand, cron_limit_that_is_not_a_positive_integer_is_rejected) {
    const std::vector<FieldValue> limits = {std::int32_t{0}, std::int32_t{-1}, std::string("abc"),
                                            std::string("0"), 1.5, true,
                                            std::int64_t{std::numeric_limits<int>::max()} + 1};
    for (const auto& limit : limits) {
        const auto c = parse(command({{"x-cron", std::string("@daily")}, {"x-cron-limit", limit}}),
                             with_stub_cron());
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), HasSubstr("x-cron-limit"));
    }
}

TEST(ParseCommand, cron_limit_error_names_the_value) {
    const auto c = parse(command({{"x-cron", std::string("@daily")},
                                  {"x-cron-limit", std::string("abc")}}),
                         with_stub_cron());
    EXPECT_THAT(rejection_of(c), AllOf(HasSubstr("x-cron-limit"), HasSubstr("'abc'")));
}

TEST(ParseCommand, cron_until_that_is_not_rfc3339_is_rejected) {
    for (const FieldValue& until : {FieldValue{std::string("next year")},
                                   FieldValue{std::int64_t{1798761600000}}}) {
        const auto c = parse(command({{"x-cron", std::string("@daily")}, {"x-cron-until", until}}),
                             with_stub_cron());
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), HasSubstr("x-cron-until"));
    }
}

TEST(ParseCommand, cron_tz_and_expression_must_be_strings) {
    const auto tz = parse(command({{"x-cron", std::string("@daily")}, {"x-cron-tz", std::int32_t{1}}}),
                          with_stub_cron());
    ASSERT_REJECTED(tz);
    EXPECT_THAT(rejection_of(tz), HasSubstr("x-cron-tz"));
    const auto expression = parse(command({{"x-cron", std::int32_t{5}}}), with_stub_cron());
    ASSERT_REJECTED(expression);
    EXPECT_THAT(rejection_of(expression), HasSubstr("x-cron"));
}

TEST(ParseCommand, cron_error_from_first_cron_run_is_the_rejection) {
    const auto limits =
        with_cron([](const CronSpec&, TimePoint) -> std::variant<TimePoint, std::string> {
            return std::string("x-cron: '61 * * * *': minute 61 is out of range");
        });
    const auto c = parse(command({{"x-cron", std::string("61 * * * *")}}), limits);
    ASSERT_REJECTED(c);
    EXPECT_EQ(rejection_of(c), "x-cron: '61 * * * *': minute 61 is out of range");
}

// --- body -----------------------------------------------------------------------------------

TEST(ParseCommand, body_over_max_body_is_rejected_naming_its_size) {
    CommandLimits limits;
    limits.max_body_bytes = 10;
    auto message = delayed(std::int32_t{5});
    message.body = std::string(11, 'x');
    const auto c = parse(message, limits);
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c), AllOf(HasSubstr("body"), HasSubstr("11")));
}

TEST(ParseCommand, body_exactly_at_max_body_is_accepted_unchanged) {
    CommandLimits limits;
    limits.max_body_bytes = 10;
    auto message = delayed(std::int32_t{5});
    message.body = std::string("\0\xff\x01" "abcdefg", 10);
    const auto c = parse(message, limits);
    ASSERT_SCHEDULED(c);
    EXPECT_EQ(schedule_of(c)->body, message.body);
}

TEST(ParseCommand, default_max_body_is_one_mebibyte) {
    auto message = delayed(std::int32_t{5});
    message.body = std::string(1024 * 1024, 'b');
    ASSERT_SCHEDULED(parse(message));
    message.body += 'b';
    const auto c = parse(message);
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c), HasSubstr("1048577"));
}

// --- x-replace ------------------------------------------------------------------------------

TEST(ParseCommand, replace_accepts_true_in_every_form) {
    for (const FieldValue& value : {FieldValue{true}, FieldValue{std::string("true")},
                                   FieldValue{std::string("TRUE")}, FieldValue{std::string("1")},
                                   FieldValue{std::int32_t{1}}, FieldValue{std::uint8_t{1}}}) {
        const auto c = parse(command({{"x-delay", std::int32_t{5}}, {"x-replace", value}}));
        ASSERT_SCHEDULED(c);
        EXPECT_TRUE(schedule_of(c)->replace);
    }
}

TEST(ParseCommand, replace_false_or_absent_does_not_replace) {
    for (const FieldValue& value : {FieldValue{false}, FieldValue{std::string("false")},
                                   FieldValue{std::int32_t{0}}}) {
        const auto c = parse(command({{"x-delay", std::int32_t{5}}, {"x-replace", value}}));
        ASSERT_SCHEDULED(c);
        EXPECT_FALSE(schedule_of(c)->replace);
    }
    const auto absent = parse(delayed(std::int32_t{5}));
    ASSERT_SCHEDULED(absent);
    EXPECT_FALSE(schedule_of(absent)->replace);
}

TEST(ParseCommand, replace_with_a_bad_value_is_rejected_naming_the_header) {
    for (const FieldValue& value : {FieldValue{std::string("yes")}, FieldValue{std::int32_t{2}},
                                   FieldValue{Void{}}}) {
        const auto c = parse(command({{"x-delay", std::int32_t{5}}, {"x-replace", value}}));
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), HasSubstr("x-replace"));
    }
    const auto c = parse(command({{"x-delay", std::int32_t{5}}, {"x-replace", std::string("yes")}}));
    EXPECT_THAT(rejection_of(c), HasSubstr("'yes'"));
}

// --- x-cancel -------------------------------------------------------------------------------

TEST(ParseCommand, cancel_with_message_id_is_a_cancel_command) {
    for (const FieldValue& value : {FieldValue{true}, FieldValue{std::string("true")},
                                   FieldValue{std::int32_t{1}}}) {
        const auto c = parse(command({{"x-cancel", value}}, "job-42"));
        const auto* cancel = std::get_if<CancelCommand>(&c.action);
        ASSERT_NE(cancel, nullptr) << outcome_of(c);
        EXPECT_EQ(cancel->id, "job-42");
        EXPECT_EQ(c.id, "job-42");
    }
}

TEST(ParseCommand, cancel_ignores_body_and_time_headers) {
    CommandLimits limits;
    limits.max_body_bytes = 1;
    auto message = command({{"x-cancel", true}, {"x-delay", std::int32_t{-5}}}, "job-42");
    message.body = "this body is ignored";
    const auto c = parse(message, limits);
    ASSERT_TRUE(std::holds_alternative<CancelCommand>(c.action)) << outcome_of(c);
}

TEST(ParseCommand, cancel_without_message_id_is_rejected_and_no_id_is_generated) {
    for (const std::optional<std::string>& id : {std::optional<std::string>{},
                                                std::optional<std::string>{""}}) {
        const auto parsed = parse_counting(command({{"x-cancel", true}}, id));
        ASSERT_REJECTED(parsed.command);
        EXPECT_THAT(rejection_of(parsed.command), AllOf(HasSubstr("x-cancel"), HasSubstr("message_id")));
        EXPECT_EQ(parsed.ids_generated, 0);
        EXPECT_EQ(parsed.command.id, "");
    }
}

TEST(ParseCommand, cancel_false_is_an_ordinary_schedule) {
    const auto c = parse(command({{"x-cancel", false}, {"x-delay", std::int32_t{5}}}));
    ASSERT_SCHEDULED(c);
    EXPECT_EQ(find_header(schedule_of(c)->properties, "x-cancel"), nullptr);
}

TEST(ParseCommand, cancel_with_a_bad_value_is_rejected) {
    const auto c = parse(command({{"x-cancel", std::string("please")}}, "job-42"));
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c), AllOf(HasSubstr("x-cancel"), HasSubstr("'please'")));
}

// --- reply_to, correlation_id, ids --------------------------------------------------------

TEST(ParseCommand, reply_to_and_correlation_id_are_captured) {
    auto message = command({{"x-delay", std::int32_t{5}}, {"x-reply-to", std::string("replies")}});
    message.properties.correlation_id = "corr-7";
    const auto c = parse(message);
    ASSERT_SCHEDULED(c);
    EXPECT_EQ(c.reply_to, "replies");
    EXPECT_EQ(c.correlation_id, "corr-7");
}

TEST(ParseCommand, reply_to_and_correlation_id_are_captured_on_rejection_too) {
    auto message = command({{"x-delay", std::int32_t{-1}}, {"x-reply-to", std::string("replies")}},
                           "job-9");
    message.properties.correlation_id = "corr-7";
    const auto c = parse(message);
    ASSERT_REJECTED(c);
    EXPECT_EQ(c.reply_to, "replies");
    EXPECT_EQ(c.correlation_id, "corr-7");
    EXPECT_EQ(c.id, "job-9");
}

TEST(ParseCommand, reply_to_and_correlation_id_are_captured_on_cancel) {
    auto message = command({{"x-cancel", true}, {"x-reply-to", std::string("replies")}}, "job-42");
    message.properties.correlation_id = "corr-7";
    const auto c = parse(message);
    ASSERT_TRUE(std::holds_alternative<CancelCommand>(c.action)) << outcome_of(c);
    EXPECT_EQ(c.reply_to, "replies");
    EXPECT_EQ(c.correlation_id, "corr-7");
}

TEST(ParseCommand, without_reply_to_no_receipt_queue_is_set) {
    const auto c = parse(delayed(std::int32_t{5}));
    EXPECT_EQ(c.reply_to, std::nullopt);
    EXPECT_EQ(c.correlation_id, std::nullopt);
}

TEST(ParseCommand, reply_to_that_is_not_a_queue_name_is_rejected) {
    for (const FieldValue& value : {FieldValue{std::int32_t{5}}, FieldValue{std::string("")},
                                   FieldValue{std::string(256, 'q')},
                                   FieldValue{ByteArray{"replies"}}}) {
        const auto c = parse(command({{"x-delay", std::int32_t{5}}, {"x-reply-to", value}}));
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), HasSubstr("x-reply-to"));
        EXPECT_EQ(c.reply_to, std::nullopt);
    }
}

TEST(ParseCommand, message_id_is_the_job_id) {
    const auto parsed = parse_counting(command({{"x-delay", std::int32_t{5}}}, "order-17"));
    ASSERT_SCHEDULED(parsed.command);
    EXPECT_EQ(parsed.command.id, "order-17");
    EXPECT_EQ(schedule_of(parsed.command)->id, "order-17");
    EXPECT_EQ(schedule_of(parsed.command)->properties.message_id, "order-17");
    EXPECT_EQ(parsed.ids_generated, 0);
}

TEST(ParseCommand, missing_or_empty_message_id_gets_a_generated_id_released_as_message_id) {
    for (const std::optional<std::string>& id : {std::optional<std::string>{},
                                                std::optional<std::string>{""}}) {
        const auto parsed = parse_counting(command({{"x-delay", std::int32_t{5}}}, id));
        ASSERT_SCHEDULED(parsed.command);
        EXPECT_EQ(parsed.ids_generated, 1);
        EXPECT_EQ(parsed.command.id, "generated-1");
        EXPECT_EQ(schedule_of(parsed.command)->id, "generated-1");
        EXPECT_EQ(schedule_of(parsed.command)->properties.message_id, "generated-1");
    }
}

TEST(ParseCommand, no_id_is_generated_for_a_rejected_command) {
    const auto parsed = parse_counting(command({{"x-delay", std::int32_t{-5}}}, std::nullopt));
    ASSERT_REJECTED(parsed.command);
    EXPECT_EQ(parsed.ids_generated, 0);
}

TEST(ParseCommand, non_utf8_message_id_is_rejected) {
    const auto c = parse(command({{"x-delay", std::int32_t{5}}}, std::string("job-\xff\xfe")));
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c), AllOf(HasSubstr("message_id"), HasSubstr("\\xff")));
    EXPECT_EQ(c.id, "");
}

TEST(ParseCommand, message_id_with_nul_is_rejected) {
    const auto c = parse(command({{"x-delay", std::int32_t{5}}}, std::string("job\0x", 5)));
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c), HasSubstr("message_id"));
}

TEST(ParseCommand, non_utf8_routing_key_is_rejected) {
    auto message = delayed(std::int32_t{5});
    message.routing_key = "orders.\xc3";
    const auto c = parse(message);
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c), AllOf(HasSubstr("routing key"), HasSubstr("\\xc3")));
}

TEST(ParseCommand, utf8_routing_key_and_id_are_accepted) {
    auto message = command({{"x-delay", std::int32_t{5}}}, "commande-\xc3\xa9t\xc3\xa9");
    message.routing_key = "caf\xc3\xa9.\xe2\x82\xac";
    const auto c = parse(message);
    ASSERT_SCHEDULED(c);
    EXPECT_EQ(schedule_of(c)->routing_key, "caf\xc3\xa9.\xe2\x82\xac");
    EXPECT_EQ(schedule_of(c)->id, "commande-\xc3\xa9t\xc3\xa9");
}

TEST(ParseCommand, too_many_headers_are_rejected_naming_the_count) {
    CommandLimits limits;
    limits.max_header_count = 3;
    const auto at = parse(command({{"x-delay", std::int32_t{5}}, {"a", 1}, {"b", 2}}), limits);
    ASSERT_SCHEDULED(at);
    const auto over =
        parse(command({{"x-delay", std::int32_t{5}}, {"a", 1}, {"b", 2}, {"c", 3}}), limits);
    ASSERT_REJECTED(over);
    EXPECT_THAT(rejection_of(over), AllOf(HasSubstr("headers"), HasSubstr("4"), HasSubstr("3")));
}

TEST(ParseCommand, too_many_headers_rejection_still_sends_the_receipt_asked_for) {
    CommandLimits limits;
    limits.max_header_count = 2;
    auto message = command({{"x-reply-to", std::string("replies")},
                            {"x-delay", std::int32_t{5}},
                            {"a", 1}});
    message.properties.correlation_id = "corr-7";
    const auto c = parse(message, limits);
    ASSERT_REJECTED(c);
    EXPECT_EQ(c.reply_to, "replies");
    EXPECT_EQ(c.correlation_id, "corr-7");
}

// --- release properties ---------------------------------------------------------------------

FieldTable every_type_table() {
    return {
        {"void", Void{}},
        {"bool", true},
        {"i8", std::int8_t{-8}},
        {"u8", std::uint8_t{200}},
        {"i16", std::int16_t{-16000}},
        {"u16", std::uint16_t{65000}},
        {"i32", std::int32_t{-2000000000}},
        {"u32", std::uint32_t{4000000000u}},
        {"i64", std::numeric_limits<std::int64_t>::min()},
        {"u64", std::numeric_limits<std::uint64_t>::max()},
        {"f32", 1.5f},
        {"f64", -2.25},
        {"decimal", Decimal{2, 12345}},
        {"str", std::string("caf\xc3\xa9 \0 \xff", 9)},
        {"timestamp", Timestamp{1795339800}},
        {"bytes", ByteArray{std::string("\0\xff\x7f", 3)}},
        {"array", FieldArray{std::int32_t{1}, std::string("two"),
                             FieldArray{FieldTable{{"deep", 3.5}}}}},
        {"table", FieldTable{{"nested", FieldArray{std::int16_t{1}, Void{}}},
                             {"dup", std::int32_t{1}},
                             {"dup", std::int32_t{2}}}},
        {"dup", std::string("first")},
        {"dup", std::string("second")},
    };
}

TEST(ParseCommand, release_properties_remove_control_headers_move_user_id_and_expiration) {
    Message message;
    message.routing_key = "orders.created";
    message.body = "payload";
    auto& p = message.properties;
    p.content_type = "application/json";
    p.content_encoding = "gzip";
    p.delivery_mode = 1;
    p.priority = 7;
    p.correlation_id = "corr-1";
    p.reply_to = "amq.rabbitmq.reply-to";
    p.expiration = "60000";
    p.message_id = "job-1";
    p.timestamp = 1795339800;
    p.type = "order";
    p.user_id = "alice";
    p.app_id = "shop";
    p.cluster_id = "c1";
    FieldTable headers;
    const auto custom = every_type_table();
    // Control headers interleaved with custom ones, including a repeated control header.
    headers.emplace_back("x-delay", std::int32_t{5});
    for (std::size_t i = 0; i < custom.size(); ++i) {
        headers.push_back(custom[i]);
        if (i == 2) headers.emplace_back("x-replace", false);
        if (i == 5) headers.emplace_back("x-reply-to", std::string("receipts"));
        if (i == 9) headers.emplace_back("x-hourglass-exchange", std::string("hourglass.out"));
        if (i == 12) headers.emplace_back("x-cancel", false);
        if (i == 15) headers.emplace_back("x-delay", std::int32_t{99});
    }
    p.headers = headers;

    const auto c = parse(message);
    ASSERT_SCHEDULED(c);
    const auto& released = schedule_of(c)->properties;

    BasicProperties expected = p;
    expected.user_id.reset();
    expected.expiration.reset();
    expected.delivery_mode = 2;
    expected.headers = custom;
    expected.headers->emplace_back("x-hourglass-user-id", std::string("alice"));
    expected.headers->emplace_back("x-hourglass-expiration", std::string("60000"));
    EXPECT_EQ(released, expected);
    EXPECT_EQ(due_offset_ms(c), 5);  // the first x-delay counts
}

TEST(ParseCommand, every_control_header_is_removed_from_the_release) {
    const std::vector<std::string> control = {"x-delay",      "x-schedule-at", "x-cron",
                                              "x-cron-tz",    "x-cron-until",  "x-cron-limit",
                                              "x-replace",    "x-cancel",      "x-reply-to",
                                              "x-hourglass-exchange"};
    auto message = command({{"x-cron", std::string("@daily")},
                            {"x-cron-tz", std::string("Europe/Paris")},
                            {"x-cron-until", std::string("2030-01-01T00:00:00Z")},
                            {"x-cron-limit", std::int32_t{2}},
                            {"x-replace", true},
                            {"x-cancel", false},
                            {"x-reply-to", std::string("receipts")},
                            {"x-hourglass-exchange", std::string("hourglass.out")},
                            {"keep", std::string("me")}});
    const auto c = parse(message, with_stub_cron());
    ASSERT_SCHEDULED(c);
    const auto& released = schedule_of(c)->properties;
    for (const auto& name : control) {
        EXPECT_EQ(find_header(released, name), nullptr) << name;
    }
    ASSERT_TRUE(released.headers.has_value());
    EXPECT_EQ(*released.headers, (FieldTable{{"keep", std::string("me")}}));

    const auto d = parse(command({{"x-schedule-at", std::string("2027-01-01T00:00:00Z")},
                                  {"keep", std::string("me")}}));
    ASSERT_SCHEDULED(d);
    EXPECT_EQ(find_header(schedule_of(d)->properties, "x-schedule-at"), nullptr);
    EXPECT_EQ(*schedule_of(d)->properties.headers, (FieldTable{{"keep", std::string("me")}}));
}

TEST(ParseCommand, delivery_mode_is_always_persistent_on_release) {
    for (const std::optional<std::uint8_t> mode :
         {std::optional<std::uint8_t>{}, std::optional<std::uint8_t>{1},
          std::optional<std::uint8_t>{2}}) {
        auto message = delayed(std::int32_t{5});
        message.properties.delivery_mode = mode;
        const auto c = parse(message);
        ASSERT_SCHEDULED(c);
        EXPECT_EQ(schedule_of(c)->properties.delivery_mode, std::uint8_t{2});
    }
}

TEST(ParseCommand, user_id_header_replaces_a_header_of_the_same_name) {
    auto message = command({{"x-delay", std::int32_t{5}},
                            {"x-hourglass-user-id", std::string("forged")}});
    message.properties.user_id = "alice";
    const auto c = parse(message);
    ASSERT_SCHEDULED(c);
    const auto& headers = *schedule_of(c)->properties.headers;
    EXPECT_EQ(headers, (FieldTable{{"x-hourglass-user-id", std::string("alice")}}));
}

// Reference §3.5: over AMQP the owner is the user_id RabbitMQ checked, else the configured
// default; operators act on every job whatever the scope.
TEST(CommandOwner, is_the_checked_user_id_or_the_default_and_operators_act_on_any_job) {
    OwnerPolicy policy{.owner_only = true, .default_owner = "anonymous", .operators = {"ops"}};
    auto message = command({{"x-cancel", true}});
    message.properties.message_id = "job-1";
    EXPECT_EQ(amqp_owner(message, policy), "anonymous");
    message.properties.user_id = "billing";
    EXPECT_EQ(amqp_owner(message, policy), "billing");
    message.properties.user_id = std::string("bad\xff", 4);
    EXPECT_EQ(amqp_owner(message, policy), "bad\\xff") << "stored escaped, as text PostgreSQL takes";

    Command issued;
    assign_owner(issued, "billing", policy);
    EXPECT_EQ(issued.owner, "billing");
    EXPECT_TRUE(issued.owner_only);
    assign_owner(issued, "ops", policy);
    EXPECT_FALSE(issued.owner_only);
    policy.owner_only = false;
    assign_owner(issued, "billing", policy);
    EXPECT_FALSE(issued.owner_only) << "--command-scope any";
}

TEST(ParseCommand, properties_without_user_id_or_expiration_get_no_moved_headers) {
    const auto c = parse(command({{"x-delay", std::int32_t{5}}, {"keep", std::int32_t{1}}}));
    ASSERT_SCHEDULED(c);
    const auto& released = schedule_of(c)->properties;
    EXPECT_EQ(find_header(released, "x-hourglass-user-id"), nullptr);
    EXPECT_EQ(find_header(released, "x-hourglass-expiration"), nullptr);
    EXPECT_EQ(released.user_id, std::nullopt);
    EXPECT_EQ(released.expiration, std::nullopt);
}

TEST(ParseCommand, routing_key_and_body_are_kept) {
    auto message = delayed(std::int32_t{5});
    message.routing_key = "a.b.c";
    message.body = std::string("\0bin\xff", 5);
    const auto c = parse(message);
    ASSERT_SCHEDULED(c);
    EXPECT_EQ(schedule_of(c)->routing_key, "a.b.c");
    EXPECT_EQ(schedule_of(c)->body, message.body);
    EXPECT_EQ(schedule_of(c)->exchange, "");
}

// --- x-hourglass-exchange -------------------------------------------------------------------

Message targeting(std::string exchange) {
    return command({{"x-delay", std::int32_t{5}}, {"x-hourglass-exchange", std::move(exchange)}});
}

TEST(ParseCommand, target_exchange_equal_to_the_output_exchange_means_the_default) {
    const auto c = parse(targeting("hourglass.out"));
    ASSERT_SCHEDULED(c);
    EXPECT_EQ(schedule_of(c)->exchange, "");

    CommandLimits limits;
    limits.output_exchange = "acme.out";
    const auto d = parse(targeting("acme.out"), limits);
    ASSERT_SCHEDULED(d);
    EXPECT_EQ(schedule_of(d)->exchange, "");
    ASSERT_REJECTED(parse(targeting("hourglass.out"), limits));
}

TEST(ParseCommand, other_target_exchange_without_allow_regex_is_rejected_naming_it) {
    const auto c = parse(targeting("legacy.delayed"));
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c),
                AllOf(HasSubstr("x-hourglass-exchange"), HasSubstr("legacy.delayed")));
}

TEST(ParseCommand, target_exchange_matching_the_whole_allow_regex_is_accepted) {
    CommandLimits limits;
    limits.allow_exchange = [](std::string_view name) { return name == "legacy.delayed"; };
    const auto c = parse(targeting("legacy.delayed"), limits);
    ASSERT_SCHEDULED(c);
    EXPECT_EQ(schedule_of(c)->exchange, "legacy.delayed");
    EXPECT_EQ(find_header(schedule_of(c)->properties, "x-hourglass-exchange"), nullptr);
}

TEST(ParseCommand, target_exchange_the_allow_list_refuses_is_rejected_naming_it) {
    CommandLimits limits;
    limits.allow_exchange = [](std::string_view name) { return name == "legacy"; };
    for (const std::string name : {"legacy.delayed", "my.legacy", "legacyx"}) {
        SCOPED_TRACE(name);
        const auto c = parse(targeting(name), limits);
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), AllOf(HasSubstr("x-hourglass-exchange"), HasSubstr(name)));
    }
    ASSERT_SCHEDULED(parse(targeting("legacy"), limits));
}

TEST(ParseCommand, target_exchange_that_is_not_a_name_is_rejected) {
    for (const FieldValue& value : {FieldValue{std::int32_t{1}}, FieldValue{std::string("")},
                                   FieldValue{std::string("bad\xff")}}) {
        const auto c = parse(command({{"x-delay", std::int32_t{5}}, {"x-hourglass-exchange", value}}));
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), HasSubstr("x-hourglass-exchange"));
    }
}

// --- receipts -------------------------------------------------------------------------------

std::set<std::string> keys_of(const nlohmann::json& json) {
    std::set<std::string> keys;
    for (const auto& [key, value] : json.items()) keys.insert(key);
    return keys;
}

const std::set<std::string> kReceiptKeys = {"id", "status", "due", "error"};

TEST(ReceiptJson, scheduled_receipt_has_due_and_null_error) {
    CommandOutcome outcome;
    outcome.status = CommandStatus::scheduled;
    outcome.due = from_epoch_ms(1795339800250);
    const auto json = nlohmann::json::parse(receipt_json("job-1", outcome));
    EXPECT_EQ(keys_of(json), kReceiptKeys);
    EXPECT_EQ(json["id"], "job-1");
    EXPECT_EQ(json["status"], "scheduled");
    EXPECT_EQ(json["due"], "2026-11-22T09:30:00.250Z");
    EXPECT_TRUE(json["error"].is_null());
}

TEST(ReceiptJson, rejected_receipt_has_error_and_null_due) {
    CommandOutcome outcome;
    outcome.status = CommandStatus::rejected;
    outcome.error = "x-delay: -5 (i32) is negative; it must be >= 0 ms";
    const auto json = nlohmann::json::parse(receipt_json("job-1", outcome));
    EXPECT_EQ(keys_of(json), kReceiptKeys);
    EXPECT_EQ(json["status"], "rejected");
    EXPECT_TRUE(json["due"].is_null());
    EXPECT_EQ(json["error"], "x-delay: -5 (i32) is negative; it must be >= 0 ms");
}

TEST(ReceiptJson, every_status_is_spelled_as_in_the_spec) {
    for (const auto status : {CommandStatus::scheduled, CommandStatus::duplicate,
                              CommandStatus::replaced, CommandStatus::cancelled,
                              CommandStatus::too_late, CommandStatus::not_found,
                              CommandStatus::rejected}) {
        CommandOutcome outcome;
        outcome.status = status;
        const auto json = nlohmann::json::parse(receipt_json("x", outcome));
        EXPECT_EQ(keys_of(json), kReceiptKeys);
        EXPECT_EQ(json["status"], std::string(to_string(status)));
        EXPECT_TRUE(json["due"].is_null());
        EXPECT_TRUE(json["error"].is_null());
    }
}

TEST(ReceiptJson, quotes_and_control_characters_are_escaped) {
    CommandOutcome outcome;
    outcome.status = CommandStatus::rejected;
    outcome.error = "bad \"value\"\n\t\\ here";
    const auto json = nlohmann::json::parse(receipt_json("id \"quoted\"", outcome));
    EXPECT_EQ(json["id"], "id \"quoted\"");
    EXPECT_EQ(json["error"], "bad \"value\"\n\t\\ here");
}

TEST(ReceiptJson, invalid_utf8_still_gives_valid_json) {
    CommandOutcome outcome;
    outcome.status = CommandStatus::rejected;
    outcome.error = "bad \xff byte";
    const auto text = receipt_json("job-\xfe", outcome);
    nlohmann::json json;
    ASSERT_NO_THROW(json = nlohmann::json::parse(text)) << text;
    EXPECT_EQ(keys_of(json), kReceiptKeys);
    EXPECT_TRUE(json["id"].is_null());
    ASSERT_TRUE(json["error"].is_string());
    EXPECT_EQ(json["error"], "bad \xef\xbf\xbd byte");  // U+FFFD replaces the bad byte
}

TEST(ReceiptJson, receipt_of_a_parsed_rejection_names_the_header) {
    const auto c = parse(delayed(std::int32_t{-5}));
    CommandOutcome outcome;
    outcome.status = CommandStatus::rejected;
    outcome.error = rejection_of(c);
    const auto json = nlohmann::json::parse(receipt_json(c.id, outcome));
    EXPECT_EQ(json["id"], "job-1");
    EXPECT_THAT(json["error"].get<std::string>(), AllOf(HasSubstr("x-delay"), HasSubstr("-5")));
}

// --- Hostile input (reference §4) ---------------------------------------------------------------

TEST(HostileInput, times_postgresql_cannot_store_are_rejected_by_the_parser) {
    // The last: year 0000 east of UTC, the year before year 1 (found by fuzz/rfc3339_fuzz).
    for (const std::string at : {"0000-01-01T00:00:00Z", "0001-01-01T00:00:00+00:01",
                                 "9999-12-31T23:59:59-00:01", "0000-01-01t20:30:00+21:00"}) {
        SCOPED_TRACE(at);
        const auto c = parse(scheduled_at(at));
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), AllOf(HasSubstr("x-schedule-at"), HasSubstr("out of range")));
    }
    // The very edges are accepted: PostgreSQL stores them and RFC 3339 writes them.
    ASSERT_SCHEDULED(parse(scheduled_at(std::string("0001-01-01T00:00:00Z"))));
    CommandLimits far;
    far.max_delay = std::chrono::duration_cast<Milliseconds>(std::chrono::days{3000000});
    ASSERT_SCHEDULED(parse(scheduled_at(std::string("9999-12-31T23:59:59.999Z")), far));
}

TEST(HostileInput, cron_until_out_of_range_is_rejected) {
    CommandLimits limits;
    limits.first_cron_run = [](const CronSpec&, TimePoint after)
        -> std::variant<TimePoint, std::string> { return after; };
    const auto c = parse(command({{"x-cron", std::string("* * * * *")},
                                  {"x-cron-until", std::string("0000-06-01T00:00:00Z")}}),
                         limits);
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c), AllOf(HasSubstr("x-cron-until"), HasSubstr("out of range")));
}

TEST(HostileInput, a_long_target_exchange_is_rejected_before_the_allow_list_sees_it) {
    CommandLimits limits;
    std::size_t longest_seen = 0;
    limits.allow_exchange = [&](std::string_view name) {
        longest_seen = std::max(longest_seen, name.size());
        return true;
    };
    auto message = command({{"x-delay", 5}, {"x-hourglass-exchange", std::string(60 * 1024, 'a')}});
    const auto c = parse(message, limits);
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c), AllOf(HasSubstr("x-hourglass-exchange"), HasSubstr("61440 bytes")));
    EXPECT_EQ(longest_seen, 0u);
    message.properties.headers->back().second = std::string(255, 'a');
    ASSERT_SCHEDULED(parse(message, limits));
    EXPECT_EQ(longest_seen, 255u);
}

TEST(HostileInput, error_texts_quote_at_most_200_bytes_of_a_value) {
    const CommandLimits limits;
    const auto huge = std::string(70 * 1024, 'z');
    for (const auto& message :
         {command({{"x-delay", huge}}), command({{"x-schedule-at", huge}}),
          command({{"x-delay", 5}, {"x-cancel", huge}}), command({{"x-delay", 5}, {"x-replace", huge}}),
          command({{"x-cron", std::string("* * * * *")}, {"x-cron-limit", huge}})}) {
        const auto c = parse(message, limits);
        ASSERT_REJECTED(c);
        EXPECT_LT(rejection_of(c).size(), 400u) << rejection_of(c).substr(0, 100);
    }
}

TEST(HostileInput, names_over_255_bytes_are_rejected) {
    auto long_key = delayed(5);
    long_key.routing_key = std::string(256, 'k');
    EXPECT_THAT(rejection_of(parse(long_key)), HasSubstr("routing key"));
    auto long_reply = command({{"x-delay", 5}, {"x-reply-to", std::string(256, 'q')}});
    EXPECT_THAT(rejection_of(parse(long_reply)), HasSubstr("x-reply-to"));
}

FieldValue nested_tables(int depth) {
    FieldValue value = std::int32_t{1};
    for (int i = 0; i < depth; ++i) value = FieldTable{{"n", std::move(value)}};
    return value;
}

TEST(HostileInput, deep_header_tables_are_rejected_and_shallow_ones_kept) {
    const auto deep = parse(command({{"x-delay", 5}, {"deep", nested_tables(40)}}));
    ASSERT_REJECTED(deep);
    EXPECT_THAT(rejection_of(deep), AllOf(HasSubstr("'deep'"), HasSubstr("deep; the limit is 16")));
    const auto shallow = parse(command({{"x-delay", 5}, {"shallow", nested_tables(15)}}));
    ASSERT_SCHEDULED(shallow);
    EXPECT_EQ(*find_header(schedule_of(shallow)->properties, "shallow"), nested_tables(15));
}

TEST(HostileInput, properties_that_would_not_fit_a_release_frame_are_rejected) {
    CommandLimits limits;
    limits.max_properties_bytes = 10000;
    auto message = command({{"x-delay", 5}, {"big", std::string(9000, 'b')}});
    ASSERT_SCHEDULED(parse(message, limits));
    message.properties.headers->back().second = std::string(10000, 'b');
    const auto c = parse(message, limits);
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c), AllOf(HasSubstr("headers"), HasSubstr("at most 10000")));
}

TEST(HostileInput, x_hourglass_headers_on_a_command_are_not_stored) {
    const auto c = parse(command({{"x-delay", 5},
                                  {"x-hourglass-id", std::string("forged")},
                                  {"x-hourglass-run", 99},
                                  {"x-hourglass-due", std::string("2000-01-01T00:00:00.000Z")},
                                  {"x-hourglass-error", std::string("forged")},
                                  {"x-hourglass-anything", 1},
                                  {"x-other", 1}}));
    ASSERT_SCHEDULED(c);
    const auto& headers = *schedule_of(c)->properties.headers;
    ASSERT_EQ(headers.size(), 1u);
    EXPECT_EQ(headers[0].first, "x-other");
}

TEST(HostileInput, control_characters_in_values_are_escaped_in_errors) {
    const auto c = parse(command({{"x-delay", std::string("5\n[error] forged log line\x1b[31m")}}));
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c), AllOf(Not(HasSubstr("\n")), Not(HasSubstr("\x1b")), HasSubstr("\\x0a")));
}

}  // namespace
}  // namespace hourglass

namespace hourglass {
namespace {

// --- x-cron-catchup ---------------------------------------------------------------------------

TEST(ParseCommand, cron_catchup_takes_skip_one_or_all_and_defaults_to_one) {
    for (const auto& [text, policy] : {std::pair{"skip", Catchup::skip}, {"one", Catchup::one},
                                       {"all", Catchup::all}}) {
        const auto c = parse(command({{"x-cron", std::string("@daily")},
                                      {"x-cron-catchup", std::string(text)}}),
                             with_stub_cron());
        ASSERT_SCHEDULED(c);
        EXPECT_EQ(schedule_of(c)->cron->catchup, policy) << text;
        EXPECT_EQ(find_header(schedule_of(c)->properties, "x-cron-catchup"), nullptr)
            << "a control header, removed from the release";
    }
    const auto plain = parse(command({{"x-cron", std::string("@daily")}}), with_stub_cron());
    ASSERT_SCHEDULED(plain);
    EXPECT_EQ(plain.id.empty(), false);
    EXPECT_EQ(schedule_of(plain)->cron->catchup, Catchup::one);
}

TEST(ParseCommand, cron_catchup_other_than_skip_one_or_all_is_rejected_naming_it) {
    for (const FieldValue& value : {FieldValue{std::string("ALL")}, FieldValue{std::string("")},
                                    FieldValue{std::int32_t{1}}, FieldValue{true}}) {
        const auto c = parse(command({{"x-cron", std::string("@daily")}, {"x-cron-catchup", value}}),
                             with_stub_cron());
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), AllOf(HasSubstr("x-cron-catchup"), HasSubstr("skip, one or all")));
    }
}

TEST(ParseCommand, cron_catchup_without_x_cron_is_rejected) {
    const auto c = parse(command({{"x-delay", std::int32_t{5}}, {"x-cron-catchup", std::string("all")}}));
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c), HasSubstr("x-cron-catchup: set without x-cron"));
}

// --- x-pause, x-resume, x-cancel-prefix -------------------------------------------------------

TEST(ParseCommand, pause_and_resume_name_the_job_in_message_id) {
    for (const auto& [name, pause] : {std::pair{"x-pause", true}, {"x-resume", false}}) {
        const auto c = parse(command({{name, true}}, "nightly"));
        const auto* control = std::get_if<PauseCommand>(&c.action);
        ASSERT_NE(control, nullptr) << name << ": " << outcome_of(c);
        EXPECT_EQ(control->id, "nightly");
        EXPECT_EQ(control->pause, pause);
        const auto parsed = parse_counting(command({{name, true}}, std::nullopt));
        ASSERT_REJECTED(parsed.command);
        EXPECT_THAT(rejection_of(parsed.command), AllOf(HasSubstr(name), HasSubstr("message_id")));
        EXPECT_EQ(parsed.ids_generated, 0);
    }
}

TEST(ParseCommand, a_control_header_set_to_false_is_no_control) {
    const auto c = parse(command({{"x-pause", false}, {"x-delay", std::int32_t{5}}}));
    ASSERT_SCHEDULED(c);
    EXPECT_EQ(find_header(schedule_of(c)->properties, "x-pause"), nullptr);
}

TEST(ParseCommand, cancel_prefix_takes_a_routing_key_prefix) {
    const auto c = parse(command({{"x-cancel-prefix", std::string("orders.eu.")}}, std::nullopt));
    const auto* control = std::get_if<CancelPrefixCommand>(&c.action);
    ASSERT_NE(control, nullptr) << outcome_of(c);
    EXPECT_EQ(control->prefix, "orders.eu.");
}

TEST(ParseCommand, cancel_prefix_that_is_not_a_name_is_rejected) {
    for (const FieldValue& value :
         {FieldValue{std::string("")}, FieldValue{std::string(256, 'a')}, FieldValue{true},
          FieldValue{std::string("bad\xff")}}) {
        const auto c = parse(command({{"x-cancel-prefix", value}}));
        ASSERT_REJECTED(c);
        EXPECT_THAT(rejection_of(c), HasSubstr("x-cancel-prefix"));
    }
}

TEST(ParseCommand, two_controls_at_once_are_rejected) {
    const auto c = parse(command({{"x-cancel", true}, {"x-pause", true}}));
    ASSERT_REJECTED(c);
    EXPECT_THAT(rejection_of(c), HasSubstr("set at most one"));
    const auto d = parse(command({{"x-resume", true}, {"x-cancel-prefix", std::string("a")}}));
    ASSERT_REJECTED(d);
}

TEST(ReceiptJson, a_cancel_by_prefix_receipt_carries_the_count) {
    CommandOutcome outcome{CommandStatus::cancelled, std::nullopt, "", false, 1234};
    const auto receipt = nlohmann::json::parse(receipt_json("", outcome));
    EXPECT_EQ(receipt["status"], "cancelled");
    EXPECT_EQ(receipt["count"], 1234);
    EXPECT_EQ(receipt["id"], "") << "no message_id, as any command without one";
    const auto plain = nlohmann::json::parse(receipt_json("a", {CommandStatus::paused}));
    EXPECT_EQ(plain["status"], "paused");
    EXPECT_FALSE(plain.contains("count"));
}

}  // namespace
}  // namespace hourglass
