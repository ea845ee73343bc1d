// `hourglass schedule` / `cancel` (src/cli/client.hpp): the command messages they publish and
// the exit code of each receipt status.
#include "cli/client.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "hourglass/command.hpp"

namespace hourglass::cli {
namespace {

const delay::TopologyNames kNames("acme");

TEST(ScheduleCommand, carries_key_body_id_and_the_time_header) {
    ScheduleRequest request;
    request.routing_key = "orders.created";
    request.delay = "1500";
    request.id = "order-42";
    request.body = "{\"order\": 42}";
    request.content_type = "application/json";
    request.headers = {"x-tenant=acme", "empty="};
    const auto command = schedule_command(request, kNames);
    EXPECT_EQ(command.exchange, "acme.in");
    EXPECT_EQ(command.routing_key, "orders.created");
    EXPECT_EQ(command.body, "{\"order\": 42}");
    EXPECT_EQ(command.properties.message_id, "order-42");
    EXPECT_EQ(command.properties.content_type, "application/json");
    const auto* delay = find_header(command.properties, "x-delay");
    ASSERT_NE(delay, nullptr);
    EXPECT_EQ(*delay, FieldValue(std::string("1500"))) << "passed on as written";
    EXPECT_EQ(*find_header(command.properties, "x-tenant"), FieldValue(std::string("acme")));
    EXPECT_EQ(*find_header(command.properties, "empty"), FieldValue(std::string()));
    EXPECT_EQ(find_header(command.properties, "x-schedule-at"), nullptr);
}

TEST(ScheduleCommand, a_delay_with_a_unit_becomes_milliseconds) {
    ScheduleRequest request;
    request.delay = "5s";
    EXPECT_EQ(*find_header(schedule_command(request, kNames).properties, "x-delay"),
              FieldValue(std::int64_t{5000}));
}

TEST(ScheduleCommand, invalid_delays_reach_hourglass_unchanged) {
    ScheduleRequest request;
    request.delay = "-5";
    EXPECT_EQ(*find_header(schedule_command(request, kNames).properties, "x-delay"),
              FieldValue(std::string("-5")));
}

TEST(ScheduleCommand, cron_with_zone_until_limit_and_replace) {
    ScheduleRequest request;
    request.cron = "0 9 * * MON";
    request.zone = "Europe/Berlin";
    request.until = "2027-01-01T00:00:00Z";
    request.limit = "3";
    request.replace = true;
    const auto properties = schedule_command(request, kNames).properties;
    EXPECT_EQ(*find_header(properties, "x-cron"), FieldValue(std::string("0 9 * * MON")));
    EXPECT_EQ(*find_header(properties, "x-cron-tz"), FieldValue(std::string("Europe/Berlin")));
    EXPECT_EQ(*find_header(properties, "x-cron-until"),
              FieldValue(std::string("2027-01-01T00:00:00Z")));
    EXPECT_EQ(*find_header(properties, "x-cron-limit"), FieldValue(std::string("3")));
    EXPECT_EQ(*find_header(properties, "x-replace"), FieldValue(true));
    EXPECT_FALSE(properties.message_id) << "no --id: hourglass generates one";
}

TEST(ScheduleCommand, body_file_is_read_binary_safe) {
    const auto path = ::testing::TempDir() + "/hourglass-body.bin";
    const std::string bytes("a\0b\xff", 4);
    std::ofstream(path, std::ios::binary) << bytes;
    ScheduleRequest request;
    request.at = "2026-11-22T09:30:00Z";
    request.body_file = path;
    EXPECT_EQ(schedule_command(request, kNames).body, bytes);
    request.body_file = path + ".missing";
    EXPECT_THROW(schedule_command(request, kNames), std::invalid_argument);
}

TEST(ScheduleCommand, malformed_headers_and_the_reply_queue_header_are_refused) {
    ScheduleRequest request;
    request.at = "0";
    request.headers = {"novalue"};
    EXPECT_THROW(schedule_command(request, kNames), std::invalid_argument);
    request.headers = {"=value"};
    EXPECT_THROW(schedule_command(request, kNames), std::invalid_argument);
    request.headers = {"x-reply-to=q"};
    EXPECT_THROW(schedule_command(request, kNames), std::invalid_argument);
}

TEST(ControlCommand, cancel_pause_and_resume_set_the_id_and_their_header) {
    for (const auto& [control, header] : {std::pair{Control::cancel, "x-cancel"},
                                          {Control::pause, "x-pause"},
                                          {Control::resume, "x-resume"}}) {
        const auto command = control_command(control, "order-42", kNames);
        EXPECT_EQ(command.exchange, "acme.in");
        EXPECT_EQ(command.properties.message_id, "order-42");
        ASSERT_NE(find_header(command.properties, header), nullptr) << header;
        EXPECT_EQ(*find_header(command.properties, header), FieldValue(true));
        EXPECT_EQ(command.properties.headers->size(), 1u) << header;
    }
}

TEST(ControlCommand, cancel_by_prefix_names_the_prefix_and_no_job) {
    const auto command = control_command(Control::cancel_prefix, "orders.eu.", kNames);
    EXPECT_EQ(command.exchange, "acme.in");
    EXPECT_FALSE(command.properties.message_id.has_value());
    EXPECT_EQ(*find_header(command.properties, "x-cancel-prefix"), FieldValue(std::string("orders.eu.")));
}

TEST(ScheduleCommand, catchup_is_passed_on_as_written) {
    ScheduleRequest request;
    request.cron = "* * * * *";
    request.catchup = "all";
    const auto command = schedule_command(request, kNames);
    EXPECT_EQ(*find_header(command.properties, "x-cron-catchup"), FieldValue(std::string("all")));
}

TEST(ExitCode, one_per_kind_of_receipt) {
    for (const auto* status :
         {"scheduled", "replaced", "duplicate", "cancelled", "paused", "resumed"}) {
        EXPECT_EQ(exit_code_for_status(status), kExitAccepted) << status;
    }
    EXPECT_EQ(exit_code_for_status("rejected"), kExitRejected);
    EXPECT_EQ(exit_code_for_status("not_found"), kExitNotApplied);
    EXPECT_EQ(exit_code_for_status("too_late"), kExitNotApplied);
    EXPECT_EQ(exit_code_for_status("surprise"), kExitFailed);
}

}  // namespace
}  // namespace hourglass::cli
