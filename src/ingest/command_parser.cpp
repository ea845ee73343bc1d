#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/text.hpp"
#include "hourglass/command.hpp"
#include "hourglass/properties_json.hpp"

namespace hourglass {

std::string_view to_string(CommandStatus status) noexcept {
    switch (status) {
        case CommandStatus::scheduled: return "scheduled";
        case CommandStatus::duplicate: return "duplicate";
        case CommandStatus::replaced: return "replaced";
        case CommandStatus::cancelled: return "cancelled";
        case CommandStatus::too_late: return "too_late";
        case CommandStatus::not_found: return "not_found";
        case CommandStatus::rejected: return "rejected";
        case CommandStatus::paused: return "paused";
        case CommandStatus::resumed: return "resumed";
    }
    return "rejected";
}

std::string_view to_string(Catchup catchup) noexcept {
    switch (catchup) {
        case Catchup::skip: return "skip";
        case Catchup::one: return "one";
        case Catchup::all: return "all";
    }
    return "one";
}

std::optional<Catchup> catchup_from_string(std::string_view text) noexcept {
    for (const auto catchup : {Catchup::skip, Catchup::one, Catchup::all}) {
        if (text == to_string(catchup)) return catchup;
    }
    return std::nullopt;
}

std::string receipt_json(const std::string& id, const CommandOutcome& outcome) {
    nlohmann::json receipt;
    receipt["id"] = is_storable_text(id) ? nlohmann::json(id) : nlohmann::json(nullptr);
    receipt["status"] = to_string(outcome.status);
    receipt["due"] = outcome.due ? nlohmann::json(format_rfc3339_ms(*outcome.due)) : nullptr;
    receipt["error"] = outcome.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(outcome.error);
    if (outcome.count) receipt["count"] = *outcome.count;
    return receipt.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void assign_owner(Command& command, std::string owner, const OwnerPolicy& policy) {
    command.owner_only = policy.owner_only && std::find(policy.operators.begin(),
                                                        policy.operators.end(),
                                                        owner) == policy.operators.end();
    command.owner = std::move(owner);
}

std::string amqp_owner(const Message& message, const OwnerPolicy& policy) {
    const auto& user = message.properties.user_id;
    if (!user) return policy.default_owner;
    // RabbitMQ's user names are UTF-8; anything else is stored escaped rather than refused.
    return is_storable_text(*user) ? *user : printable(*user, kMaxNameBytes);
}

namespace {

std::string_view type_name(const FieldValue& value) {
    static constexpr std::string_view kNames[] = {
        "void", "bool", "i8",      "u8",        "i16",   "u16",   "i32",  "u32",  "i64",
        "u64",  "f32",  "f64",     "decimal",   "string", "timestamp", "bytes", "array", "table"};
    return kNames[value.value.index()];
}

// "<value> (<type>)" for error messages.
std::string describe(const FieldValue& value) {
    return std::visit(
        [&](const auto& v) -> std::string {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::string>) return quote_value(v) + " (string)";
            else if constexpr (std::is_same_v<T, bool>) return v ? "true (bool)" : "false (bool)";
            else if constexpr (std::is_unsigned_v<T>)
                return std::to_string(static_cast<unsigned long long>(v)) + " (" +
                       std::string(type_name(value)) + ")";
            else if constexpr (std::is_integral_v<T>)
                return std::to_string(static_cast<long long>(v)) + " (" +
                       std::string(type_name(value)) + ")";
            else if constexpr (std::is_floating_point_v<T>)
                return std::to_string(v) + " (" + std::string(type_name(value)) + ")";
            else return "a value of type " + std::string(type_name(value));
        },
        value.value);
}

std::optional<std::int64_t> parse_decimal_integer(std::string_view text) {
    if (text.empty() || text.size() > 20) return std::nullopt;
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

// An integer from any integer type, an integral float, or a decimal string.
std::optional<std::int64_t> integer_of(const FieldValue& value) {
    return std::visit(
        [](const auto& v) -> std::optional<std::int64_t> {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, bool>) return std::nullopt;
            else if constexpr (std::is_same_v<T, std::uint64_t>) {
                if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                    return std::nullopt;
                return static_cast<std::int64_t>(v);
            } else if constexpr (std::is_integral_v<T>) return static_cast<std::int64_t>(v);
            else if constexpr (std::is_floating_point_v<T>) {
                if (!std::isfinite(v) || std::trunc(v) != v || std::fabs(v) > 9.0e15)
                    return std::nullopt;
                return static_cast<std::int64_t>(v);
            } else if constexpr (std::is_same_v<T, std::string>) return parse_decimal_integer(v);
            else return std::nullopt;
        },
        value.value);
}

// true/false from a bool, "true"/"false" (any case), or 1/0.
std::optional<bool> boolean_of(const FieldValue& value) {
    if (const auto* b = std::get_if<bool>(&value.value)) return *b;
    if (const auto* s = std::get_if<std::string>(&value.value)) {
        std::string lower;
        for (char c : *s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (lower == "true" || lower == "1") return true;
        if (lower == "false" || lower == "0") return false;
        return std::nullopt;
    }
    const auto number = integer_of(value);
    if (number == 1) return true;
    if (number == 0) return false;
    return std::nullopt;
}

const std::string* string_of(const FieldValue& value) {
    return std::get_if<std::string>(&value.value);
}

struct Rejected {
    std::string error;
};

// Helpers below throw Rejected, caught once in parse_command: the reason travels as a value.
[[noreturn]] void reject(std::string error) { throw Rejected{std::move(error)}; }

std::string header_name(std::string_view name) { return std::string(name); }

TimePoint checked_due(std::string_view name, const FieldValue& value, TimePoint due,
                      TimePoint received_at, const CommandLimits& limits) {
    if (due - received_at > limits.max_delay) {
        reject(header_name(name) + ": " + describe(value) + " is more than --max-delay (" +
               std::to_string(limits.max_delay.count()) + " ms) ahead");
    }
    return due;
}

TimePoint due_from_delay(const FieldValue& value, TimePoint received_at,
                         const CommandLimits& limits) {
    const auto delay = integer_of(value);
    if (!delay) {
        reject("x-delay: " + describe(value) +
               " is not an integer number of milliseconds");
    }
    if (*delay < 0) reject("x-delay: " + describe(value) + " is negative; it must be >= 0 ms");
    if (Milliseconds{*delay} > limits.max_delay) {
        reject("x-delay: " + describe(value) + " exceeds --max-delay (" +
               std::to_string(limits.max_delay.count()) + " ms)");
    }
    return received_at + Milliseconds{*delay};
}

bool storable_time(TimePoint time) {
    const auto ms = to_epoch_ms(time);
    return ms >= kMinDueEpochMs && ms <= kMaxDueEpochMs;
}

// x-schedule-at and x-opt-delivery-time (`name`): an absolute due time, the same forms and
// bounds for both.
TimePoint due_from_absolute_time(std::string_view name, const FieldValue& value,
                                 TimePoint received_at, const CommandLimits& limits) {
    std::optional<TimePoint> due;
    if (const auto* timestamp = std::get_if<Timestamp>(&value.value)) {
        if (timestamp->seconds <= static_cast<std::uint64_t>(kMaxDueEpochMs / 1000))
            due = from_epoch_ms(static_cast<std::int64_t>(timestamp->seconds) * 1000);
    } else if (const auto* text = string_of(value); text && text->find_first_not_of(
                                                                "0123456789") != std::string::npos) {
        due = parse_rfc3339(*text);
        if (due && !storable_time(*due)) {
            reject(header_name(name) + ": " + describe(value) +
                   " is out of range (years 0001 to 9999 in UTC)");
        }
        if (!due) {
            reject(header_name(name) + ": " + describe(value) +
                   " is not an RFC 3339 time with offset (e.g. 2026-11-22T09:30:00.250Z) or "
                   "epoch milliseconds");
        }
    } else if (const auto epoch_ms = integer_of(value)) {
        if (*epoch_ms >= 0 && *epoch_ms <= kMaxDueEpochMs) due = from_epoch_ms(*epoch_ms);
    } else {
        reject(header_name(name) + ": " + describe(value) +
               " is neither an RFC 3339 string nor epoch milliseconds");
    }
    if (!due) reject(header_name(name) + ": " + describe(value) + " is out of range");
    return checked_due(name, value, *due, received_at, limits);
}

// x-hourglass-expires-after: a duration with a unit (`30s`), or whole milliseconds; at least
// 1 ms and at most --max-delay.
Milliseconds expires_after_of(const FieldValue& value, const CommandLimits& limits) {
    std::optional<Milliseconds> duration;
    if (const auto* text = string_of(value)) {
        try {
            duration = parse_duration(*text);
        } catch (const std::invalid_argument&) {
            reject("x-hourglass-expires-after: " + describe(value) +
                   " is not a duration (a number and a unit: 500ms, 5s, 10m, 2h, 7d)");
        }
    } else if (const auto ms = integer_of(value)) {
        duration = Milliseconds{*ms};
    } else {
        reject("x-hourglass-expires-after: " + describe(value) +
               " is neither a duration (30s) nor whole milliseconds");
    }
    if (*duration < Milliseconds{1}) {
        reject("x-hourglass-expires-after: " + describe(value) + " must be at least 1 ms");
    }
    if (*duration > limits.max_delay) {
        reject("x-hourglass-expires-after: " + describe(value) + " exceeds --max-delay (" +
               std::to_string(limits.max_delay.count()) + " ms)");
    }
    return *duration;
}

CronSpec cron_from_headers(const BasicProperties& properties, const FieldValue& expression) {
    CronSpec spec;
    const auto* text = string_of(expression);
    if (!text || !is_storable_text(*text)) {
        reject("x-cron: " + describe(expression) + " is not a string of UTF-8 text");
    }
    spec.expression = *text;
    if (const auto* tz = find_header(properties, header::kCronTz)) {
        const auto* zone = string_of(*tz);
        if (!zone || !is_storable_text(*zone)) {
            reject("x-cron-tz: " + describe(*tz) + " is not a string of UTF-8 text");
        }
        spec.zone = *zone;
    }
    if (const auto* until = find_header(properties, header::kCronUntil)) {
        const auto* until_text = string_of(*until);
        spec.until = until_text ? parse_rfc3339(*until_text) : std::nullopt;
        if (!spec.until) reject("x-cron-until: " + describe(*until) + " is not an RFC 3339 time");
        if (!storable_time(*spec.until)) {
            reject("x-cron-until: " + describe(*until) + " is out of range (years 0001 to 9999 in UTC)");
        }
    }
    if (const auto* limit = find_header(properties, header::kCronLimit)) {
        const auto value = integer_of(*limit);
        if (!value || *value < 1 || *value > std::numeric_limits<int>::max()) {
            reject("x-cron-limit: " + describe(*limit) + " is not a positive integer");
        }
        spec.limit = static_cast<int>(*value);
    }
    if (const auto* catchup = find_header(properties, header::kCronCatchup)) {
        const auto* name = string_of(*catchup);
        const auto policy = name ? catchup_from_string(*name) : std::nullopt;
        if (!policy) reject("x-cron-catchup: " + describe(*catchup) + " is not skip, one or all");
        spec.catchup = *policy;
    }
    return spec;
}

constexpr std::string_view kOwnHeaderPrefix = "x-hourglass-";

// How deeply tables and arrays nest in a value (1 for a table of scalars). The decoder cuts
// nesting at amqp::kMaxFieldDepth, so this recursion is bounded.
std::size_t nesting_depth(const FieldValue& value) {
    std::size_t deepest = 0;
    if (const auto* table = std::get_if<FieldTable>(&value.value)) {
        for (const auto& entry : *table) deepest = std::max(deepest, nesting_depth(entry.second));
        return deepest + 1;
    }
    if (const auto* array = std::get_if<FieldArray>(&value.value)) {
        for (const auto& item : *array) deepest = std::max(deepest, nesting_depth(item));
        return deepest + 1;
    }
    return 0;
}

void check_header_bounds(const BasicProperties& properties, const CommandLimits& limits) {
    if (!properties.headers) return;
    if (properties.headers->size() > limits.max_header_count) {
        reject("headers: " + std::to_string(properties.headers->size()) +
               " entries exceed the limit of " + std::to_string(limits.max_header_count));
    }
    for (const auto& [name, value] : *properties.headers) {
        const auto depth = nesting_depth(value) + 1;
        if (depth > limits.max_header_depth) {
            reject("headers: " + quote_value(name) + " nests tables or arrays " + std::to_string(depth) +
                   " deep; the limit is " + std::to_string(limits.max_header_depth));
        }
    }
}

void check_name(std::string_view what, const std::string& name) {
    if (name.size() > kMaxNameBytes) {
        reject(std::string(what) + ": " + quote_value(name) + " is " + std::to_string(name.size()) +
               " bytes long; a name holds at most " + std::to_string(kMaxNameBytes));
    }
    if (!is_storable_text(name)) {
        reject(std::string(what) + ": " + quote_value(name) + " is not valid UTF-8 text");
    }
}

// The properties the job will be released with (reference §3.1).
BasicProperties release_properties(BasicProperties properties, const std::string& id) {
    for (const auto name :
         {header::kDelay, header::kScheduleAt, header::kDeliveryTime, header::kCron,
          header::kCronTz, header::kCronUntil, header::kCronLimit, header::kCronCatchup,
          header::kReplace, header::kCancel, header::kPause, header::kResume,
          header::kCancelPrefix, header::kReplyTo}) {
        remove_header(properties, name);
    }
    // x-hourglass-* headers are hourglass's own: a command cannot forge an id, a run, a due
    // time, a target or an error (reference §4).
    if (properties.headers) {
        std::erase_if(*properties.headers,
                      [](const auto& entry) { return entry.first.starts_with(kOwnHeaderPrefix); });
    }
    if (properties.user_id) {
        set_header(properties, std::string(header::kUserId), *properties.user_id);
        properties.user_id.reset();
    }
    if (properties.expiration) {
        set_header(properties, std::string(header::kExpiration), *properties.expiration);
        properties.expiration.reset();
    }
    properties.delivery_mode = 2;
    properties.message_id = id;
    if (properties.headers && properties.headers->empty()) properties.headers.reset();
    return properties;
}

// A control header set to true (x-cancel, x-pause, x-resume), or false if set and false.
bool control_flag(const BasicProperties& properties, std::string_view name) {
    const auto* flag = find_header(properties, name);
    if (!flag) return false;
    const auto value = boolean_of(*flag);
    if (!value) reject(std::string(name) + ": " + describe(*flag) + " is not true or false");
    return *value;
}

// The command of a control header (reference §3.2, §3.3), if the message carries one: at most
// one of them, and cancel, pause and resume name the job in message_id (`id`, null if unset).
std::optional<decltype(Command::action)> control_command(const BasicProperties& properties,
                                                         const std::string* id) {
    const bool cancel = control_flag(properties, header::kCancel);
    const bool pause = control_flag(properties, header::kPause);
    const bool resume = control_flag(properties, header::kResume);
    const auto* prefix = find_header(properties, header::kCancelPrefix);
    if (int(cancel) + int(pause) + int(resume) + int(prefix != nullptr) > 1) {
        reject("x-cancel, x-pause, x-resume and x-cancel-prefix: set at most one of them");
    }
    if (prefix) {
        const auto* text = string_of(*prefix);
        if (!text || text->empty() || !is_storable_text(*text)) {
            reject("x-cancel-prefix: " + describe(*prefix) +
                   " is not a routing key prefix (1 to 255 bytes of UTF-8)");
        }
        check_name("x-cancel-prefix", *text);
        return CancelPrefixCommand{*text};
    }
    if (!cancel && !pause && !resume) return std::nullopt;
    const auto name = cancel ? header::kCancel : pause ? header::kPause : header::kResume;
    if (!id) {
        reject(std::string(name) + ": message_id must be set to the id of the job to " +
               (cancel ? "cancel" : pause ? "pause" : "resume"));
    }
    if (cancel) return CancelCommand{*id};
    return PauseCommand{*id, pause};
}

// The one time header of a schedule command (x-delay, x-schedule-at, x-opt-delivery-time or
// x-cron); rejects none, several, or cron's companions without x-cron.
struct TimeHeader {
    const FieldValue* delay = nullptr;
    const FieldValue* schedule_at = nullptr;
    const FieldValue* delivery_time = nullptr;
    const FieldValue* cron = nullptr;
};

TimeHeader time_header_of(const BasicProperties& properties) {
    const TimeHeader found{find_header(properties, header::kDelay),
                           find_header(properties, header::kScheduleAt),
                           find_header(properties, header::kDeliveryTime),
                           find_header(properties, header::kCron)};
    const auto& [delay, schedule_at, delivery_time, cron] = found;
    const int time_headers =
        (delay ? 1 : 0) + (schedule_at ? 1 : 0) + (delivery_time ? 1 : 0) + (cron ? 1 : 0);
    if (time_headers == 0) {
        reject("no time header: set exactly one of x-delay, x-schedule-at, x-opt-delivery-time "
               "or x-cron");
    }
    if (time_headers > 1) {
        std::string names;
        for (const auto& [name, present] :
             {std::pair{header::kDelay, delay}, {header::kScheduleAt, schedule_at},
              {header::kDeliveryTime, delivery_time}, {header::kCron, cron}}) {
            if (present) names += (names.empty() ? "" : " and ") + std::string(name);
        }
        reject(names + " are set together: set exactly one time header");
    }
    if (!cron) {
        for (const auto name :
             {header::kCronTz, header::kCronUntil, header::kCronLimit, header::kCronCatchup}) {
            if (find_header(properties, name)) reject(std::string(name) + ": set without x-cron");
        }
    }
    return found;
}

// x-hourglass-exchange: the target exchange, "" for the output exchange; rejects a name the
// allow-list does not allow.
std::string target_exchange_of(const BasicProperties& properties, const CommandLimits& limits) {
    const auto* target = find_header(properties, header::kExchange);
    if (!target) return {};
    const auto* name = string_of(*target);
    if (!name || name->empty()) {
        reject("x-hourglass-exchange: " + describe(*target) + " is not an exchange name");
    }
    // Length first: the allow-list never sees more than a name can hold.
    check_name("x-hourglass-exchange", *name);
    if (*name == limits.output_exchange) return {};
    if (!limits.allow_exchange || !limits.allow_exchange(*name)) {
        reject("x-hourglass-exchange: exchange " + quote_value(*name) +
               " is not allowed (see --allow-exchange)");
    }
    return *name;
}

// The due time (and, for x-cron, the schedule) the time header says.
void set_due(ScheduleCommand& schedule, const TimeHeader& time, const BasicProperties& properties,
             TimePoint received_at, const CommandLimits& limits) {
    if (time.delay) {
        schedule.due_at = due_from_delay(*time.delay, received_at, limits);
    } else if (time.schedule_at) {
        schedule.due_at = due_from_absolute_time(header::kScheduleAt, *time.schedule_at, received_at, limits);
    } else if (time.delivery_time) {
        schedule.due_at =
            due_from_absolute_time(header::kDeliveryTime, *time.delivery_time, received_at, limits);
    } else {
        auto spec = cron_from_headers(properties, *time.cron);
        if (!limits.first_cron_run) reject("x-cron: recurring jobs are not enabled");
        auto first = limits.first_cron_run(spec, received_at);
        if (auto* error = std::get_if<std::string>(&first)) reject(*error);
        schedule.due_at = std::get<TimePoint>(first);
        schedule.cron = std::move(spec);
    }
}

Command parse_or_throw(const Message& message, TimePoint received_at, const CommandLimits& limits,
                       const std::function<std::string()>& generate_id, Command& command) {
    const auto& properties = message.properties;
    // x-reply-to first, so that every later rejection still gets its receipt.
    if (const auto* reply_to = find_header(properties, header::kReplyTo)) {
        const auto* queue = string_of(*reply_to);
        if (!queue || queue->empty() || queue->size() > kMaxNameBytes) {
            reject("x-reply-to: " + describe(*reply_to) + " is not a queue name");
        }
        command.reply_to = *queue;
    }
    check_header_bounds(properties, limits);
    const bool has_id = properties.message_id && !properties.message_id->empty();
    if (has_id) {
        check_name("message_id", *properties.message_id);
        command.id = *properties.message_id;
    }

    if (auto control = control_command(properties, has_id ? &command.id : nullptr)) {
        command.action = std::move(*control);
        return command;
    }

    const auto time = time_header_of(properties);
    if (message.body.size() > limits.max_body_bytes) {
        reject("body: " + std::to_string(message.body.size()) + " bytes exceed --max-body (" +
               std::to_string(limits.max_body_bytes) + " bytes)");
    }
    check_name("routing key", message.routing_key);

    ScheduleCommand schedule;
    schedule.routing_key = message.routing_key;
    schedule.accepted_at = received_at;
    if (const auto* replace = find_header(properties, header::kReplace)) {
        const auto value = boolean_of(*replace);
        if (!value) reject("x-replace: " + describe(*replace) + " is not true or false");
        schedule.replace = *value;
    }
    schedule.exchange = target_exchange_of(properties, limits);
    set_due(schedule, time, properties, received_at, limits);

    // Read before release_properties strips every x-hourglass-* header.
    if (const auto* expires = find_header(properties, header::kExpiresAfter)) {
        schedule.expires_after = expires_after_of(*expires, limits);
    }
    if (!has_id) command.id = generate_id();
    schedule.id = command.id;
    schedule.body = message.body;
    schedule.properties = release_properties(properties, command.id);
    if (const auto size = encoded_size(schedule.properties); size > limits.max_properties_bytes) {
        reject("headers: the properties take " + std::to_string(size) +
               " bytes; a job's may take at most " + std::to_string(limits.max_properties_bytes) +
               " (the connection's frame_max less room for hourglass's own headers)");
    }
    command.action = std::move(schedule);
    return command;
}

}  // namespace

Command parse_command(const Message& message, TimePoint received_at, const CommandLimits& limits,
                      const std::function<std::string()>& generate_id) {
    Command command;
    command.correlation_id = message.properties.correlation_id;
    try {
        return parse_or_throw(message, received_at, limits, generate_id, command);
    } catch (const Rejected& rejected) {
        command.action = Rejection{rejected.error};
        return command;
    } catch (const std::exception& error) {
        // Defensive: no input may crash ingest; report what went wrong.
        command.action =
            Rejection{"command could not be read: " + printable(error.what(), kMaxQuotedBytes)};
        return command;
    }
}

}  // namespace hourglass
