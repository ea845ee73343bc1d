// Commands on hourglass.in (reference §3): when a command is due (x-delay, x-schedule-at,
// x-opt-delivery-time, expiry, the count of time headers) and its cron (x-cron and its options).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "unit/ingest/command_parser_helpers.hpp"

namespace hourglass::command_parser_tests {
namespace {

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

}  // namespace
}  // namespace hourglass::command_parser_tests
