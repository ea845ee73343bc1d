// Helpers of the command parser's tests (tests/unit/ingest/command_parser*_test.cpp): a command
// as it arrives on hourglass.in, and what parse_command makes of it.
#pragma once

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

namespace hourglass::command_parser_tests {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// 2026-11-22T09:30:00.000Z: when hourglass received the command.
inline const TimePoint kReceived = from_epoch_ms(1795339800000);

inline Message command(FieldTable headers, std::optional<std::string> message_id = "job-1") {
    Message message;
    message.exchange = "hourglass.in";
    message.routing_key = "orders.created";
    message.body = "payload";
    message.properties.message_id = std::move(message_id);
    if (!headers.empty()) message.properties.headers = std::move(headers);
    return message;
}

inline Message delayed(FieldValue delay) { return command({{"x-delay", std::move(delay)}}); }
inline Message scheduled_at(FieldValue at) { return command({{"x-schedule-at", std::move(at)}}); }

struct Parsed {
    Command command;
    int ids_generated = 0;
};

inline Parsed parse_counting(const Message& message, const CommandLimits& limits = {}) {
    Parsed parsed;
    int calls = 0;
    parsed.command = parse_command(message, kReceived, limits, [&calls] {
        ++calls;
        return "generated-" + std::to_string(calls);
    });
    parsed.ids_generated = calls;
    return parsed;
}

inline Command parse(const Message& message, const CommandLimits& limits = {}) {
    return parse_counting(message, limits).command;
}

inline const ScheduleCommand* schedule_of(const Command& c) {
    return std::get_if<ScheduleCommand>(&c.action);
}

// The rejection text, or a marker that makes HasSubstr matchers fail with a readable message.
inline std::string rejection_of(const Command& c) {
    if (const auto* rejection = std::get_if<Rejection>(&c.action)) return rejection->error;
    return "<not rejected>";
}

inline std::string outcome_of(const Command& c) {
    if (std::holds_alternative<ScheduleCommand>(c.action)) return "schedule";
    if (std::holds_alternative<CancelCommand>(c.action)) return "cancel";
    return "rejected: " + rejection_of(c);
}

#define ASSERT_SCHEDULED(cmd) \
    ASSERT_NE(schedule_of(cmd), nullptr) << outcome_of(cmd)

#define ASSERT_REJECTED(cmd) \
    ASSERT_TRUE(std::holds_alternative<Rejection>((cmd).action)) << outcome_of(cmd)

inline std::int64_t due_offset_ms(const Command& c) {
    return to_epoch_ms(schedule_of(c)->due_at) - to_epoch_ms(kReceived);
}

inline CommandLimits with_cron(std::function<std::variant<TimePoint, std::string>(const CronSpec&,
                                                                           TimePoint)>
                            first_run) {
    CommandLimits limits;
    limits.first_cron_run = std::move(first_run);
    return limits;
}

// A first_cron_run stub: the first run is one minute after `after`.
inline CommandLimits with_stub_cron() {
    return with_cron([](const CronSpec&, TimePoint after) -> std::variant<TimePoint, std::string> {
        return after + std::chrono::minutes{1};
    });
}

}  // namespace hourglass::command_parser_tests
