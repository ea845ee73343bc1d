// libFuzzer target: every command a client can publish to hourglass.in (reference §4). Each input
// gives exactly one defined outcome, never a crash or an exception; receipts are valid JSON;
// accepted schedules carry no control header and a persistent delivery mode.
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "field_values.hpp"
#include "hourglass/command.hpp"
#include "store/job_rows.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace hourglass;
    FuzzedDataProvider in(data, size);
    Message message;
    message.exchange = "hourglass.in";
    message.routing_key = in.ConsumeRandomLengthString(40);
    message.properties = fuzzing::make_properties(in);
    message.body = in.ConsumeRandomLengthString(2000);

    CommandLimits limits;
    limits.max_body_bytes = 1000;
    limits.max_header_count = 8;
    limits.allow_exchange = [](std::string_view name) { return name.starts_with("allowed."); };
    if (in.ConsumeBool()) {
        limits.first_cron_run = [](const CronSpec& spec, TimePoint after)
            -> std::variant<TimePoint, std::string> {
            if (spec.expression.empty()) return std::string("x-cron: empty");
            return after + std::chrono::seconds{1};
        };
    }
    const auto received_at = from_epoch_ms(in.ConsumeIntegralInRange<std::int64_t>(0, 4102444800000));
    auto command = parse_command(message, received_at, limits, [] { return std::string("generated-id"); });
    assign_owner(command, amqp_owner(message, limits.owners), limits.owners);

    if (const auto* job = std::get_if<ScheduleCommand>(&command.action)) {
        for (const auto* name : {"x-delay", "x-schedule-at", "x-cron", "x-cancel", "x-replace",
                                 "x-reply-to", "x-hourglass-exchange"}) {
            if (find_header(job->properties, name) != nullptr) std::abort();
        }
        if (job->properties.delivery_mode != 2 || job->properties.user_id ||
            job->properties.expiration || job->id.empty() || job->body.size() > 1000) {
            std::abort();
        }
    }
    if (const auto* job = std::get_if<ScheduleCommand>(&command.action)) {
        // What the store sends: a row PostgreSQL accepts. Strict dump: invalid UTF-8 throws.
        const auto row = store::job_row(*job, command.owner).dump();
        const auto due = to_epoch_ms(job->due_at);
        if (due < kMinDueEpochMs || due > kMaxDueEpochMs) std::abort();
        if (job->cron && job->cron->until &&
            (to_epoch_ms(*job->cron->until) < kMinDueEpochMs ||
             to_epoch_ms(*job->cron->until) > kMaxDueEpochMs)) {
            std::abort();
        }
        if (job->id.size() > kMaxNameBytes || job->routing_key.size() > kMaxNameBytes ||
            job->exchange.size() > kMaxNameBytes || row.empty()) {
            std::abort();
        }
    }
    CommandOutcome outcome;
    if (const auto* rejection = std::get_if<Rejection>(&command.action)) {
        if (rejection->error.empty()) std::abort();
        outcome.error = rejection->error;
    }
    const auto receipt = nlohmann::json::parse(receipt_json(command.id, outcome), nullptr, false);
    if (receipt.is_discarded() || !receipt.contains("status")) std::abort();
    return 0;
}
