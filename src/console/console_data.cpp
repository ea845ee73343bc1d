#include "console/console_data.hpp"

#include "console/console_views.hpp"
#include "cron/recurrence.hpp"
#include "hourglass/cron.hpp"

namespace hourglass::console {

using nlohmann::json;

namespace {

json time_or_null(const std::optional<TimePoint>& time) {
    if (!time) return nullptr;
    return format_rfc3339_ms(*time);
}

template <typename T>
json value_or_null(const std::optional<T>& value) {
    if (!value) return nullptr;
    return *value;
}

json job_json(const store::JobRow& row) {
    return {{"id", row.id},
            {"routing_key", row.routing_key},
            {"exchange", row.exchange},
            {"state", row.state},
            {"runs", row.runs},
            {"cron", value_or_null(row.cron)},
            {"cron_tz", value_or_null(row.cron_tz)},
            {"cron_limit", value_or_null(row.cron_limit)},
            {"released_run", value_or_null(row.released_run)},
            {"lateness_ms", value_or_null(row.lateness_ms)},
            {"lease_owner", value_or_null(row.lease_owner)},
            {"owner", row.owner},
            {"due_at", time_or_null(row.due_at)},
            {"cron_until", time_or_null(row.cron_until)},
            {"accepted_at", time_or_null(row.accepted_at)},
            {"created_at", time_or_null(row.created_at)},
            {"updated_at", time_or_null(row.updated_at)},
            {"enqueued_at", time_or_null(row.enqueued_at)},
            {"released_at", time_or_null(row.released_at)},
            {"lease_until", time_or_null(row.lease_until)},
            {"body", body_view(row.body, kBodyShownBytes)},
            {"properties", json::parse(row.properties, nullptr, false)}};
}

// The runs after `due` that the schedule still has (until, limit), at most kNextRuns.
json next_runs(const store::CronScheduleRow& row) {
    json result = json::array();
    const auto parsed = cron::parse(row.cron);
    const auto* zone = cron::find_zone(row.cron_tz);
    if (!std::holds_alternative<cron::CronExpression>(parsed) || zone == nullptr) return result;
    const auto& cron_expression = std::get<cron::CronExpression>(parsed);
    std::optional<TimePoint> run = row.due_at;
    for (int number = row.runs + 1; run && result.size() < kNextRuns; ++number) {
        if ((row.cron_until && *run > *row.cron_until) || (row.cron_limit && number > *row.cron_limit)) break;
        result.push_back(format_rfc3339_ms(*run));
        run = cron::next_occurrence(cron_expression, *zone, *run);
    }
    return result;
}

}  // namespace

ConsoleData::ConsoleData(std::unique_ptr<store::ConsoleStore> store) : store_(std::move(store)) {}

json ConsoleData::instances() {
    json result = json::array();
    for (const auto& instance : store_->instances()) {
        result.push_back({{"id", instance.id},
                          {"started_at", format_rfc3339_ms(instance.started_at)},
                          {"heartbeat_at", format_rfc3339_ms(instance.heartbeat_at)},
                          {"heartbeat_age_ms", instance.heartbeat_age.count()}});
    }
    return result;
}

json ConsoleData::upcoming(TimePoint from, Milliseconds width, int slots) {
    std::vector<SlotCount> counts;
    std::int64_t pending = 0;
    std::int64_t enqueued = 0;
    for (const auto& slot : store_->upcoming(from, width, from + width * slots, kUpcomingCap)) {
        counts.push_back({slot.slot, slot.pending + slot.enqueued});
        pending += slot.pending;
        enqueued += slot.enqueued;
    }
    return upcoming_view(from, width, slots, counts, std::max(pending, enqueued), kUpcomingCap);
}

json ConsoleData::lateness() { return lateness_view(store_->latest_lateness(kLatenessSample)); }

json ConsoleData::rejections() {
    json result = json::array();
    for (const auto& rejection : store_->latest_rejections(kListLimit)) {
        result.push_back({{"rejected_at", format_rfc3339_ms(rejection.rejected_at)},
                          {"id", rejection.job_id},
                          {"routing_key", rejection.routing_key},
                          {"reason", rejection.reason}});
    }
    return result;
}

json ConsoleData::cron_schedules() {
    json result = json::array();
    for (const auto& row : store_->cron_schedules(kCronLimit)) {
        result.push_back({{"id", row.id},
                          {"routing_key", row.routing_key},
                          {"cron", row.cron},
                          {"cron_tz", row.cron_tz},
                          {"runs", row.runs},
                          {"paused", row.paused},
                          {"next_runs", row.paused ? json::array() : next_runs(row)}});
    }
    return result;
}

std::size_t ConsoleData::count_cancellable_by_prefix(const std::string& prefix) {
    return store_->count_cancellable_by_prefix(prefix, kCancelPrefixCountCap + 1);
}

std::optional<json> ConsoleData::job(const std::string& id) {
    const auto row = store_->job(id);
    if (!row) return std::nullopt;
    return job_json(*row);
}

json ConsoleData::search_routing_key(const std::string& prefix) {
    json result = json::array();
    for (const auto& row : store_->search_routing_key(prefix, kListLimit)) result.push_back(job_json(row));
    return result;
}

CommandOutcome ConsoleData::apply(Command command) { return store_->apply(std::move(command)); }

}  // namespace hourglass::console
