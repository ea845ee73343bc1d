#include "ingest/ingest_metrics.hpp"

namespace hourglass::ingest {

const std::vector<std::string_view>& rejection_reasons() {
    // The fields command errors name (src/ingest/command_parser.cpp), then the few errors that
    // name no single field, then the catch-all.
    static const std::vector<std::string_view> reasons = {
        "x-delay",        "x-schedule-at",
        "x-cron",         "x-cron-tz",
        "x-cron-until",   "x-cron-limit",
        "x-replace",      "x-cancel",
        "x-reply-to",     "x-hourglass-exchange",
        "headers",        "message_id",
        "body",           "routing_key",
        "no_time_header", "conflicting_time_headers",
        "unreadable",     "other"};
    return reasons;
}

std::string_view rejection_reason(std::string_view error) noexcept {
    // Errors read "<field>: <what is wrong>".
    const auto field = error.substr(0, error.find(':'));
    if (field == "routing key") return "routing_key";
    if (field == "no time header") return "no_time_header";
    if (field == "command could not be read") return "unreadable";
    if (field.ends_with(" are set together")) return "conflicting_time_headers";
    for (const auto reason : rejection_reasons()) {
        if (field == reason) return reason;
    }
    return "other";
}

namespace {

constexpr std::array kStatuses = {CommandStatus::scheduled, CommandStatus::duplicate,
                                  CommandStatus::replaced,  CommandStatus::cancelled,
                                  CommandStatus::too_late,  CommandStatus::not_found,
                                  CommandStatus::rejected,  CommandStatus::paused,
                                  CommandStatus::resumed};

template <std::size_t N>
std::array<metrics::Counter*, N> add_status_counters(metrics::Registry& registry) {
    static_assert(N == kStatuses.size());
    std::array<metrics::Counter*, N> counters{};
    for (const auto status : kStatuses) {
        counters[static_cast<std::size_t>(status)] = &registry.add_counter(
            "hourglass_commands_total",
            "Commands acked, by outcome: the receipt status (scheduled = accepted as a new job).",
            {{"status", std::string(to_string(status))}});
    }
    return counters;
}

std::vector<std::pair<std::string_view, metrics::Counter*>> add_reason_counters(
    metrics::Registry& registry) {
    std::vector<std::pair<std::string_view, metrics::Counter*>> counters;
    for (const auto reason : rejection_reasons()) {
        counters.emplace_back(reason,
                              &registry.add_counter("hourglass_commands_rejected_total",
                                                    "Rejected commands, by the field at fault.",
                                                    {{"reason", std::string(reason)}}));
    }
    return counters;
}

}  // namespace

IngestMetrics::IngestMetrics(metrics::Registry& registry)
    : received_(registry.add_counter(
          "hourglass_commands_received_total",
          "Commands taken from the input queue (<prefix>.in), redeliveries included.")),
      waiting_(registry.add_gauge(
          "hourglass_commands_waiting",
          "Commands not yet applied (nor acked) because another PostgreSQL transaction keeps "
          "their job's row locked; tried again every few seconds.")),
      by_status_(add_status_counters<kStatusCount>(registry)),
      rejected_by_reason_(add_reason_counters(registry)) {}

void IngestMetrics::count_outcomes(const std::vector<CommandOutcome>& outcomes) noexcept {
    for (const auto& outcome : outcomes) {
        by_status_[static_cast<std::size_t>(outcome.status)]->increment();
        if (outcome.status != CommandStatus::rejected) continue;
        const auto reason = rejection_reason(outcome.error);
        for (const auto& [code, counter] : rejected_by_reason_) {
            if (code == reason) counter->increment();
        }
    }
}

}  // namespace hourglass::ingest
