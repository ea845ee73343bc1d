#include "store/job_rows.hpp"

#include "hourglass/properties_json.hpp"

namespace hourglass::store {

using nlohmann::json;

json optional_time(const std::optional<TimePoint>& time) {
    return time ? json(format_rfc3339_ms(*time)) : json(nullptr);
}

json job_row(const ScheduleCommand& job, const std::string& owner) {
    json row = {{"id", job.id},
                {"owner", owner},
                {"routing_key", job.routing_key},
                {"exchange", job.exchange.empty() ? json(nullptr) : json(job.exchange)},
                {"due_at", format_rfc3339_ms(job.due_at)},
                {"accepted_at", format_rfc3339_ms(job.accepted_at)},
                {"body", base64_encode(job.body)},
                {"properties", properties_to_json(job.properties)}};
    if (job.expires_after) row["expires_after_ms"] = job.expires_after->count();
    if (job.cron) {
        row["cron"] = job.cron->expression;
        row["cron_tz"] = job.cron->zone;
        row["cron_until"] = optional_time(job.cron->until);
        row["cron_limit"] = job.cron->limit ? json(*job.cron->limit) : json(nullptr);
        // NULL for the default (one), as on every row stored before x-cron-catchup existed.
        if (job.cron->catchup != Catchup::one) row["cron_catchup"] = std::string(to_string(job.cron->catchup));
    }
    return row;
}

}  // namespace hourglass::store
