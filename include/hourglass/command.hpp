// Commands clients publish to `hourglass.in` (reference §3) and their outcomes.
//
// parse_command turns one received message into exactly one of: a schedule, a cancel or a
// rejection with a reason naming the header and value at fault. It is pure (no I/O, never
// throws on user input) so every rule of reference §3 is unit-tested without a broker.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "hourglass/message.hpp"
#include "hourglass/time.hpp"

namespace hourglass {

// Control headers: read by hourglass, removed before release.
namespace header {
inline constexpr std::string_view kDelay = "x-delay";
inline constexpr std::string_view kScheduleAt = "x-schedule-at";
// RabbitMQ 4.4 quorum queues' delay header (epoch ms or an AMQP timestamp): as x-schedule-at.
inline constexpr std::string_view kDeliveryTime = "x-opt-delivery-time";
inline constexpr std::string_view kCron = "x-cron";
inline constexpr std::string_view kCronTz = "x-cron-tz";
inline constexpr std::string_view kCronUntil = "x-cron-until";
inline constexpr std::string_view kCronLimit = "x-cron-limit";
// What runs missed while hourglass was down or the job paused become: skip, one or all.
inline constexpr std::string_view kCronCatchup = "x-cron-catchup";
inline constexpr std::string_view kReplace = "x-replace";
inline constexpr std::string_view kCancel = "x-cancel";
// Schedule controls (reference §3.3): pause or resume a recurring job (message_id = its id),
// cancel every pending job whose routing key starts with the header's value.
inline constexpr std::string_view kPause = "x-pause";
inline constexpr std::string_view kResume = "x-resume";
inline constexpr std::string_view kCancelPrefix = "x-cancel-prefix";
inline constexpr std::string_view kReplyTo = "x-reply-to";
inline constexpr std::string_view kExchange = "x-hourglass-exchange";
// How late is too late (a duration, e.g. `30s`): a run that would be released later than this
// after its due time goes to <prefix>.expired instead (reference §6 "Expiry").
inline constexpr std::string_view kExpiresAfter = "x-hourglass-expires-after";
// Set by the loader on a targeted run the audit observes with the last run of its release group
// (its value: that run's job id); the forwarder takes no audit copy of it and removes it.
inline constexpr std::string_view kObservedWith = "x-hourglass-observed-with";
// The release probe's (delay/topology.hpp): when the audit sent it, in Unix milliseconds.
inline constexpr std::string_view kProbe = "x-hourglass-probe";
// Set by hourglass on release (reference §7) and on rejection (reference §4).
inline constexpr std::string_view kId = "x-hourglass-id";
inline constexpr std::string_view kDue = "x-hourglass-due";
inline constexpr std::string_view kRun = "x-hourglass-run";
inline constexpr std::string_view kUserId = "x-hourglass-user-id";
inline constexpr std::string_view kExpiration = "x-hourglass-expiration";
inline constexpr std::string_view kError = "x-hourglass-error";
// On a run released after a later run of its schedule was already due: how many missed runs
// it stands for (reference §5 "Missed runs").
inline constexpr std::string_view kCatchup = "x-hourglass-catchup";
}  // namespace header

enum class CommandStatus {
    scheduled,
    duplicate,
    replaced,
    cancelled,
    too_late,
    not_found,
    rejected,
    paused,
    resumed
};
std::string_view to_string(CommandStatus status) noexcept;

// What the runs of a recurring job that were missed (a later run was already due when one was
// handed over: hourglass down, the job paused) become (x-cron-catchup, reference §5).
enum class Catchup {
    skip,  // none: the missed run goes to <prefix>.expired, the schedule goes on from now
    one,   // one run stands for all of them (the default)
    all,   // each is released, the latest kMaxCatchupRuns at most
};
std::string_view to_string(Catchup catchup) noexcept;
std::optional<Catchup> catchup_from_string(std::string_view text) noexcept;
// With x-cron-catchup: all, at most this many missed runs of one job are released; the older
// ones are coalesced into the first of them.
inline constexpr std::size_t kMaxCatchupRuns = 1000;

// A recurring schedule (reference §5); evaluated by src/cron/.
struct CronSpec {
    std::string expression;
    std::string zone = "UTC";
    std::optional<TimePoint> until;
    std::optional<int> limit;
    Catchup catchup = Catchup::one;
};

// A job as it is stored: what will be released, and when.
struct ScheduleCommand {
    std::string id;
    std::string routing_key;
    std::string exchange;  // target exchange; empty means the output exchange (hourglass.out)
    std::string body;
    // As released: control headers removed, the moves of reference §3.1 applied.
    BasicProperties properties;
    TimePoint due_at;
    TimePoint accepted_at;
    bool replace = false;
    std::optional<CronSpec> cron;
    std::optional<Milliseconds> expires_after;  // x-hourglass-expires-after
    // Set by ingest: lease the job to this instance's loader as it is inserted (a claim at
    // insert, InsertClaimOffer); the store says in CommandOutcome::claimed whether it did.
    bool claim_at_insert = false;
};

struct CancelCommand {
    std::string id;
};

// Pauses (pause = true) or resumes a recurring job (x-pause, x-resume).
struct PauseCommand {
    std::string id;
    bool pause = true;
};

// Cancels every job a cancel command would cancel whose routing key starts with `prefix`
// (x-cancel-prefix), in batches of kCancelPrefixBatch rows.
struct CancelPrefixCommand {
    std::string prefix;
};
inline constexpr std::size_t kCancelPrefixBatch = 1000;

struct Rejection {
    std::string error;  // names the header and the value at fault
};

struct Command {
    std::variant<ScheduleCommand, CancelCommand, PauseCommand, CancelPrefixCommand, Rejection> action;
    std::string id;  // the job id if known (for receipts), else empty
    std::optional<std::string> reply_to;
    std::optional<std::string> correlation_id;
    // Who issued it (reference §3.5): a new job is theirs. With owner_only, the command acts
    // on no job of another owner (OwnerPolicy).
    std::string owner;
    bool owner_only = false;
};

// Who may act on which job (reference §3.5 "Owners").
struct OwnerPolicy {
    // --command-scope owner: a command acts only on jobs of its own owner (any: on every job).
    bool owner_only = false;
    // The owner of AMQP commands without user_id (--amqp-default-owner).
    std::string default_owner;
    // Owners whose commands act on every job whatever the scope (--operator).
    std::vector<std::string> operators;
};

// Sets the command's owner, and whether the policy confines it to that owner's jobs.
void assign_owner(Command& command, std::string owner, const OwnerPolicy& policy);
// The owner of a command received over AMQP: its user_id, which RabbitMQ checked against the
// publishing connection's user, else the policy's default.
std::string amqp_owner(const Message& message, const OwnerPolicy& policy);

// AMQP short strings (exchange, queue and routing key names, message_id) hold at most 255 bytes.
inline constexpr std::size_t kMaxNameBytes = kMaxShortStringBytes;

struct CommandLimits {
    std::size_t max_body_bytes = 1024 * 1024;
    Milliseconds max_delay = std::chrono::duration_cast<Milliseconds>(std::chrono::days{3650});
    std::size_t max_header_count = 256;  // entries in the top-level header table
    std::size_t max_header_depth = 16;   // nesting of tables and arrays in the headers
    // The largest encoded properties a job may be stored with, so that its release (which adds
    // at most kReleaseHeaderReserve bytes of x-hourglass-* headers) fits the connection's
    // frame_max (reference §4). Set by ingest from the negotiated frame_max.
    std::size_t max_properties_bytes = 131072 - 4096;
    // Exchanges other than the output exchange a job may target (x-hourglass-exchange): called
    // with names of at most kMaxNameBytes only, and must run in bounded time and stack (an
    // automaton, such as RE2). Unset: none.
    std::function<bool(std::string_view)> allow_exchange;
    std::string output_exchange = "hourglass.out";
    // Validates a cron expression and zone and computes the first run after `after`; returns the
    // first due time or an error. Unset: recurring jobs are rejected.
    std::function<std::variant<TimePoint, std::string>(const CronSpec&, TimePoint after)>
        first_cron_run;
    // Who may act on which job: both doors apply it.
    OwnerPolicy owners;
};

// Room kept in a frame for the headers hourglass adds on release (x-hourglass-id, -due, -run,
// -exchange, -user-id, -expiration) and the frame's own bytes.
inline constexpr std::size_t kReleaseHeaderReserve = 2048;
// Earliest and latest due time accepted: years 0001 to 9999 in UTC, which PostgreSQL stores and
// RFC 3339 writes (year 0 and 5-digit years are refused by one or the other).
inline constexpr std::int64_t kMinDueEpochMs = -62135596800000;  // 0001-01-01T00:00:00.000Z
inline constexpr std::int64_t kMaxDueEpochMs = 253402300799999;  // 9999-12-31T23:59:59.999Z

// Turns a delivery from hourglass.in into a command. `received_at` is when hourglass took it
// (the base of x-delay); `generate_id` makes an id for schedules without message_id.
Command parse_command(const Message& message, TimePoint received_at, const CommandLimits& limits,
                      const std::function<std::string()>& generate_id);

// The outcome of a command once applied to the store.
struct CommandOutcome {
    CommandStatus status = CommandStatus::rejected;
    std::optional<TimePoint> due;
    std::string error;
    // Inserted leased to the loader (ScheduleCommand::claim_at_insert): ingest hands it over.
    bool claimed = false;
    // Jobs a cancel by prefix cancelled (the receipt's `count`).
    std::optional<std::int64_t> count = std::nullopt;
};

// The JSON receipt of reference §4.
std::string receipt_json(const std::string& id, const CommandOutcome& outcome);

// A random (version 4) UUID in its canonical text form.
std::string generate_uuid();

}  // namespace hourglass
