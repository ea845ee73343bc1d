// Commands clients publish to `hourglass.in` (SPEC §3) and their outcomes.
//
// parse_command turns one received message into exactly one of: a schedule, a cancel or a
// rejection with a reason naming the header and value at fault. It is pure (no I/O, never
// throws on user input) so every rule of SPEC §3 is unit-tested without a broker.
#pragma once

#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <variant>

#include "hourglass/message.hpp"
#include "hourglass/time.hpp"

namespace hourglass {

// Control headers: read by hourglass, removed before release.
namespace header {
inline constexpr std::string_view kDelay = "x-delay";
inline constexpr std::string_view kScheduleAt = "x-schedule-at";
inline constexpr std::string_view kCron = "x-cron";
inline constexpr std::string_view kCronTz = "x-cron-tz";
inline constexpr std::string_view kCronUntil = "x-cron-until";
inline constexpr std::string_view kCronLimit = "x-cron-limit";
inline constexpr std::string_view kReplace = "x-replace";
inline constexpr std::string_view kCancel = "x-cancel";
inline constexpr std::string_view kReplyTo = "x-reply-to";
inline constexpr std::string_view kExchange = "x-hourglass-exchange";
// Set by hourglass on release (SPEC §6) and on rejection (SPEC §3.3).
inline constexpr std::string_view kId = "x-hourglass-id";
inline constexpr std::string_view kDue = "x-hourglass-due";
inline constexpr std::string_view kRun = "x-hourglass-run";
inline constexpr std::string_view kUserId = "x-hourglass-user-id";
inline constexpr std::string_view kExpiration = "x-hourglass-expiration";
inline constexpr std::string_view kError = "x-hourglass-error";
}  // namespace header

enum class CommandStatus { scheduled, duplicate, replaced, cancelled, too_late, not_found, rejected };
std::string_view to_string(CommandStatus status) noexcept;

// A recurring schedule (SPEC §4); evaluated by src/cron/.
struct CronSpec {
    std::string expression;
    std::string zone = "UTC";
    std::optional<TimePoint> until;
    std::optional<int> limit;
};

// A job as it is stored: what will be released, and when.
struct ScheduleCommand {
    std::string id;
    std::string routing_key;
    std::string exchange;  // target exchange; empty means the output exchange (hourglass.out)
    std::string body;
    BasicProperties properties;  // as released: control headers removed, SPEC §3.1 moves applied
    TimePoint due_at;
    TimePoint accepted_at;
    bool replace = false;
    std::optional<CronSpec> cron;
};

struct CancelCommand {
    std::string id;
};

struct Rejection {
    std::string error;  // names the header and the value at fault
};

struct Command {
    std::variant<ScheduleCommand, CancelCommand, Rejection> action;
    std::string id;  // the job id if known (for receipts), else empty
    std::optional<std::string> reply_to;
    std::optional<std::string> correlation_id;
};

struct CommandLimits {
    std::size_t max_body_bytes = 1024 * 1024;
    Milliseconds max_delay = std::chrono::duration_cast<Milliseconds>(std::chrono::days{3650});
    std::size_t max_header_count = 256;  // entries in the top-level header table
    // Exchanges other than the output exchange a job may target (x-hourglass-exchange).
    std::optional<std::regex> allow_exchange;
    std::string output_exchange = "hourglass.out";
    // Validates a cron expression and zone and computes the first run after `after`; returns the
    // first due time or an error. Unset: recurring jobs are rejected.
    std::function<std::variant<TimePoint, std::string>(const CronSpec&, TimePoint after)>
        first_cron_run;
};

// Turns a delivery from hourglass.in into a command. `received_at` is when hourglass took it
// (the base of x-delay); `generate_id` makes an id for schedules without message_id.
Command parse_command(const Message& message, TimePoint received_at, const CommandLimits& limits,
                      const std::function<std::string()>& generate_id);

// The outcome of a command once applied to the store.
struct CommandOutcome {
    CommandStatus status = CommandStatus::rejected;
    std::optional<TimePoint> due;
    std::string error;
};

// The JSON receipt of SPEC §3.3.
std::string receipt_json(const std::string& id, const CommandOutcome& outcome);

// A random (version 4) UUID in its canonical text form.
std::string generate_uuid();

}  // namespace hourglass
