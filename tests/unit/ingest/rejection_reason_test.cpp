// Rejections are counted under a short, stable reason (hourglass_commands_rejected_total):
// the field the parser's error names. These cases run the real parser, so a change in its
// wording that would move a rejection to "other" fails here.
#include <gtest/gtest.h>

#include <algorithm>

#include "cron/recurrence.hpp"
#include "hourglass/command.hpp"
#include "ingest/ingest_metrics.hpp"

namespace hourglass::ingest {
namespace {

const TimePoint kReceived = from_epoch_ms(1795339800000);

std::string rejection_of(FieldTable headers, std::string body = "b",
                         std::optional<std::string> message_id = "job-1") {
    Message message;
    message.exchange = "hourglass.in";
    message.routing_key = "jobs.test";
    message.body = std::move(body);
    message.properties.message_id = std::move(message_id);
    message.properties.headers = std::move(headers);
    CommandLimits limits;
    limits.max_body_bytes = 16;
    limits.first_cron_run = cron::first_run;
    const auto command = parse_command(message, kReceived, limits, [] { return "generated"; });
    const auto* rejection = std::get_if<Rejection>(&command.action);
    return rejection ? rejection->error : "<accepted>";
}

struct Case {
    const char* name;
    FieldTable headers;
    std::string body = "b";
    std::string reason;
};

TEST(RejectionReason, each_parser_error_maps_to_the_field_at_fault) {
    const std::vector<Case> cases = {
        {"negative delay", {{"x-delay", std::int32_t{-5}}}, "b", "x-delay"},
        {"text delay", {{"x-delay", std::string("soon")}}, "b", "x-delay"},
        {"bad time", {{"x-schedule-at", std::string("tomorrow")}}, "b", "x-schedule-at"},
        {"bad cron", {{"x-cron", std::string("61 * * * *")}}, "b", "x-cron"},
        {"bad zone",
         {{"x-cron", std::string("* * * * *")}, {"x-cron-tz", std::string("Mars/Base")}},
         "b",
         "x-cron-tz"},
        {"bad limit",
         {{"x-cron", std::string("* * * * *")}, {"x-cron-limit", std::int32_t{0}}},
         "b",
         "x-cron-limit"},
        {"bad until",
         {{"x-cron", std::string("* * * * *")}, {"x-cron-until", std::string("x")}},
         "b",
         "x-cron-until"},
        {"cron header alone",
         {{"x-delay", 5}, {"x-cron-tz", std::string("UTC")}},
         "b",
         "x-cron-tz"},
        {"bad replace", {{"x-delay", 5}, {"x-replace", std::string("maybe")}}, "b", "x-replace"},
        {"bad cancel", {{"x-cancel", std::string("maybe")}}, "b", "x-cancel"},
        {"bad reply-to", {{"x-delay", 5}, {"x-reply-to", std::int32_t{1}}}, "b", "x-reply-to"},
        {"other exchange",
         {{"x-delay", 5}, {"x-hourglass-exchange", std::string("other")}},
         "b",
         "x-hourglass-exchange"},
        {"no time", {}, "b", "no_time_header"},
        {"two times",
         {{"x-delay", 5}, {"x-schedule-at", std::string("2026-01-01T00:00:00Z")}},
         "b",
         "conflicting_time_headers"},
        {"large body", {{"x-delay", 5}}, std::string(17, 'x'), "body"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        const auto error = rejection_of(c.headers, c.body);
        ASSERT_NE(error, "<accepted>");
        EXPECT_EQ(rejection_reason(error), c.reason) << error;
    }
}

TEST(RejectionReason, errors_naming_nothing_known_are_other) {
    EXPECT_EQ(rejection_reason(""), "other");
    EXPECT_EQ(rejection_reason("the database said no"), "other");
    EXPECT_EQ(rejection_reason("x-made-up: value"), "other");
}

TEST(RejectionReason, every_reason_is_in_the_registered_list) {
    const auto& reasons = rejection_reasons();
    for (const auto* error : {"x-delay: x", "routing key: 'a' is not valid UTF-8 text",
                              "message_id: 'a' is not valid UTF-8 text", "headers: 300 entries",
                              "command could not be read: bad", "nothing"}) {
        const auto reason = rejection_reason(error);
        EXPECT_NE(std::find(reasons.begin(), reasons.end(), reason), reasons.end()) << reason;
    }
}

}  // namespace
}  // namespace hourglass::ingest
