// Commands on hourglass.in (reference §3): the properties a job is released with (reference
// §3.1, §7), x-hourglass-exchange, the JSON receipt (reference §4), hostile input, x-cron-catchup,
// x-pause, x-resume and x-cancel-prefix.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "unit/ingest/command_parser_helpers.hpp"

namespace hourglass::command_parser_tests {
namespace {

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
}  // namespace hourglass::command_parser_tests
