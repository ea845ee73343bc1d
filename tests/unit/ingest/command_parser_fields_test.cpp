// Commands on hourglass.in (reference §3): the body, x-replace, x-cancel, reply_to and ids, and
// the properties a job is released with (reference §3.1, §7).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "unit/ingest/command_parser_helpers.hpp"

namespace hourglass::command_parser_tests {
namespace {

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

}  // namespace
}  // namespace hourglass::command_parser_tests
