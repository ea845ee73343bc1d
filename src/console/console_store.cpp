#include "console/console_store.hpp"

#include <pqxx/pqxx>

#include "console/console_views.hpp"
#include "cron/recurrence.hpp"
#include "hourglass/cron.hpp"

namespace hourglass::console {

using nlohmann::json;

namespace {

// The SQL of a timestamptz as exact epoch milliseconds (extract() is numeric on PG 14+).
std::string epoch_ms(const std::string& column) {
    return "floor(extract(epoch FROM " + column + ") * 1000)::bigint";
}

// The columns of a job as the console shows it; body and properties last.
std::string job_columns() {
    std::string columns = "id, routing_key, COALESCE(exchange, ''), state, runs, cron, cron_tz, "
                          "cron_limit, released_run, lateness_ms, lease_owner";
    for (const auto* time : {"due_at", "cron_until", "accepted_at", "created_at", "updated_at",
                             "enqueued_at", "released_at", "lease_until"}) {
        columns += ", " + epoch_ms(time);
    }
    return columns + ", body, properties::text";
}

json time_or_null(const pqxx::field& field) {
    if (field.is_null()) return nullptr;
    return format_rfc3339_ms(from_epoch_ms(field.as<std::int64_t>()));
}

template <typename T>
json value_or_null(const pqxx::field& field) {
    if (field.is_null()) return nullptr;
    return field.as<T>();
}

json job_of(const pqxx::row& row) {
    json job = {{"id", row[0].as<std::string>()},
                {"routing_key", row[1].as<std::string>()},
                {"exchange", row[2].as<std::string>()},
                {"state", row[3].as<std::string>()},
                {"runs", row[4].as<int>()},
                {"cron", value_or_null<std::string>(row[5])},
                {"cron_tz", value_or_null<std::string>(row[6])},
                {"cron_limit", value_or_null<int>(row[7])},
                {"released_run", value_or_null<int>(row[8])},
                {"lateness_ms", value_or_null<double>(row[9])},
                {"lease_owner", value_or_null<std::string>(row[10])}};
    const char* times[] = {"due_at", "cron_until", "accepted_at", "created_at", "updated_at",
                           "enqueued_at", "released_at", "lease_until"};
    for (std::size_t i = 0; i < std::size(times); ++i) job[times[i]] = time_or_null(row[11 + static_cast<int>(i)]);
    job["body"] = body_view(pqxx::binarystring(row[19]).str(), kBodyShownBytes);
    job["properties"] = json::parse(row[20].as<std::string>(), nullptr, false);
    return job;
}

// The runs after `due` that the schedule still has (until, limit), at most kNextRuns.
json next_runs(const std::string& expression, const std::string& zone_name, TimePoint due,
               int runs, std::optional<TimePoint> until, std::optional<int> limit) {
    json result = json::array();
    const auto parsed = cron::parse(expression);
    const auto* zone = cron::find_zone(zone_name);
    if (!std::holds_alternative<cron::CronExpression>(parsed) || zone == nullptr) return result;
    const auto& cron_expression = std::get<cron::CronExpression>(parsed);
    std::optional<TimePoint> run = due;
    for (int number = runs + 1; run && result.size() < kNextRuns; ++number) {
        if ((until && *run > *until) || (limit && number > *limit)) break;
        result.push_back(format_rfc3339_ms(*run));
        run = cron::next_occurrence(cron_expression, *zone, *run);
    }
    return result;
}

void prepare(pqxx::connection& c) {
    c.prepare("console_instances",
              "SELECT id, " + epoch_ms("started_at") + ", " + epoch_ms("heartbeat_at") +
                  ", " + epoch_ms("now()") + " FROM instances ORDER BY id LIMIT 100");
    // The earliest $4 claimable jobs (jobs_claimable_due_at, an index-only scan) and the
    // earliest $4 runs handed over (jobs_enqueued_due_at) due before the end, binned by
    // timestamp arithmetic (date_bin: twice as fast as epoch numerics per row); only the bins
    // become slot numbers, overdue ones slot 0. Runs claimed this instant (in flight for
    // milliseconds) are left out.
    c.prepare("console_upcoming",
              "SELECT GREATEST(0, (" + epoch_ms("bin") + " - $1::bigint) / $2::bigint) AS slot, "
              "sum(pending)::bigint, sum(enqueued)::bigint FROM ("
              " SELECT date_bin($2::bigint * interval '1 millisecond', due_at, "
              "                 to_timestamp($1::bigint / 1000.0)) AS bin, "
              " count(*) FILTER (WHERE source = 'p') AS pending, "
              " count(*) FILTER (WHERE source = 'e') AS enqueued FROM ("
              "  (SELECT due_at, 'p' AS source FROM jobs WHERE state = 'pending' "
              "   AND lease_owner IS NULL AND due_at < to_timestamp($3::bigint / 1000.0) "
              "   ORDER BY due_at LIMIT $4) "
              "  UNION ALL "
              "  (SELECT due_at, 'e' FROM jobs WHERE state = 'enqueued' "
              "   AND due_at >= to_timestamp($1::bigint / 1000.0) "
              "   AND due_at < to_timestamp($3::bigint / 1000.0) "
              "   ORDER BY due_at LIMIT $4)) AS due GROUP BY 1) AS bins GROUP BY 1 ORDER BY 1");
    c.prepare("console_lateness",
              "SELECT lateness_ms FROM jobs WHERE released_at IS NOT NULL "
              "AND lateness_ms IS NOT NULL ORDER BY released_at DESC LIMIT $1");
    c.prepare("console_rejections",
              "SELECT " + epoch_ms("rejected_at") +
                  ", job_id, routing_key, reason FROM rejections ORDER BY id DESC LIMIT $1");
    c.prepare("console_cron",
              "SELECT id, routing_key, cron, COALESCE(cron_tz, 'UTC'), " + epoch_ms("due_at") +
                  ", runs, " + epoch_ms("cron_until") +
                  ", cron_limit, false FROM jobs WHERE cron IS NOT NULL AND state = 'pending' "
                  "ORDER BY due_at LIMIT $1");
    // Paused schedules (jobs_paused_at), latest paused first.
    c.prepare("console_paused_cron",
              "SELECT id, routing_key, cron, COALESCE(cron_tz, 'UTC'), " + epoch_ms("due_at") +
                  ", runs, " + epoch_ms("cron_until") +
                  ", cron_limit, true FROM jobs WHERE state = 'paused' "
                  "ORDER BY paused_at DESC LIMIT $1");
    // What a cancel by prefix would cancel (store's cancel_prefix_batch), counted up to $3.
    c.prepare("console_cancel_prefix_count",
              "SELECT count(*) FROM (SELECT 1 FROM jobs WHERE routing_key COLLATE \"C\" >= $1 "
              "AND ($2::text IS NULL OR routing_key COLLATE \"C\" < $2) "
              "AND (state = 'paused' OR (state = 'pending' AND "
              "     (lease_owner IS NULL OR cron IS NOT NULL))) LIMIT $3) AS cancellable");
    c.prepare("console_job", "SELECT " + job_columns() + " FROM jobs WHERE id = $1");
    // One range scan of jobs_routing_key_id: [prefix, the first string after every extension).
    c.prepare("console_search",
              "SELECT " + job_columns() + " FROM jobs WHERE routing_key COLLATE \"C\" >= $1 "
              "AND ($2::text IS NULL OR routing_key COLLATE \"C\" < $2) "
              "ORDER BY routing_key COLLATE \"C\", id LIMIT $3");
}

}  // namespace

ConsoleStore::ConsoleStore(const store::StoreOptions& options) : store_(options) {
    pqxx::nontransaction tx(store_.connection());
    // A page must never hold PostgreSQL for long, whatever a query turns out to cost.
    tx.exec("SET statement_timeout = '5s'");
    prepare(store_.connection());
}

json ConsoleStore::instances() {
    pqxx::read_transaction tx(store_.connection());
    json result = json::array();
    for (const auto& row : tx.exec_prepared("console_instances")) {
        result.push_back({{"id", row[0].as<std::string>()},
                          {"started_at", time_or_null(row[1])},
                          {"heartbeat_at", time_or_null(row[2])},
                          {"heartbeat_age_ms", row[3].as<std::int64_t>() - row[2].as<std::int64_t>()}});
    }
    return result;
}

json ConsoleStore::upcoming(TimePoint from, Milliseconds width, int slots) {
    pqxx::read_transaction tx(store_.connection());
    const auto from_ms = to_epoch_ms(from);
    const auto end_ms = from_ms + width.count() * slots;
    std::vector<SlotCount> counts;
    std::int64_t pending = 0;
    std::int64_t enqueued = 0;
    for (const auto& row : tx.exec_prepared("console_upcoming", static_cast<long long>(from_ms),
                                            static_cast<long long>(width.count()),
                                            static_cast<long long>(end_ms),
                                            static_cast<long long>(kUpcomingCap))) {
        const auto slot_pending = row[1].as<std::int64_t>();
        const auto slot_enqueued = row[2].as<std::int64_t>();
        counts.push_back({row[0].as<std::int64_t>(), slot_pending + slot_enqueued});
        pending += slot_pending;
        enqueued += slot_enqueued;
    }
    return upcoming_view(from, width, slots, counts, std::max(pending, enqueued), kUpcomingCap);
}

json ConsoleStore::lateness() {
    pqxx::read_transaction tx(store_.connection());
    std::vector<double> lateness;
    for (const auto& row : tx.exec_prepared("console_lateness", static_cast<long>(kLatenessSample))) {
        lateness.push_back(row[0].as<double>());
    }
    return lateness_view(std::move(lateness));
}

json ConsoleStore::rejections() {
    pqxx::read_transaction tx(store_.connection());
    json result = json::array();
    for (const auto& row : tx.exec_prepared("console_rejections", static_cast<long>(kListLimit))) {
        result.push_back({{"rejected_at", time_or_null(row[0])},
                          {"id", row[1].as<std::string>()},
                          {"routing_key", row[2].as<std::string>()},
                          {"reason", row[3].as<std::string>()}});
    }
    return result;
}

json ConsoleStore::cron_schedules() {
    pqxx::read_transaction tx(store_.connection());
    json result = json::array();
    auto rows = tx.exec_prepared("console_paused_cron", static_cast<long>(kCronLimit));
    const auto live = tx.exec_prepared("console_cron", static_cast<long>(kCronLimit));
    for (const auto& row : live) {
        if (rows.size() + result.size() >= kCronLimit) break;
        result.push_back(cron_schedule_of(row));
    }
    for (const auto& row : rows) result.push_back(cron_schedule_of(row));
    return result;
}

std::size_t ConsoleStore::count_cancellable_by_prefix(const std::string& prefix) {
    pqxx::read_transaction tx(store_.connection());
    const auto upper = prefix_upper_bound(prefix);
    return tx.exec_prepared1("console_cancel_prefix_count", prefix, upper,
                             static_cast<long>(kCancelPrefixCountCap + 1))[0]
        .as<std::size_t>();
}

json ConsoleStore::cron_schedule_of(const pqxx::row& row) {
    json result;
    {
        const auto expression = row[2].as<std::string>();
        const auto zone = row[3].as<std::string>();
        const auto due = from_epoch_ms(row[4].as<std::int64_t>());
        const auto runs = row[5].as<int>();
        std::optional<TimePoint> until;
        if (!row[6].is_null()) until = from_epoch_ms(row[6].as<std::int64_t>());
        std::optional<int> limit;
        if (!row[7].is_null()) limit = row[7].as<int>();
        const bool paused = row[8].as<bool>();
        result = {{"id", row[0].as<std::string>()},
                  {"routing_key", row[1].as<std::string>()},
                  {"cron", expression},
                  {"cron_tz", zone},
                  {"runs", runs},
                  {"paused", paused},
                  {"next_runs", paused ? json::array()
                                       : next_runs(expression, zone, due, runs, until, limit)}};
    }
    return result;
}

std::optional<json> ConsoleStore::job(const std::string& id) {
    pqxx::read_transaction tx(store_.connection());
    const auto rows = tx.exec_prepared("console_job", id);
    if (rows.empty()) return std::nullopt;
    return job_of(rows[0]);
}

json ConsoleStore::search_routing_key(const std::string& prefix) {
    pqxx::read_transaction tx(store_.connection());
    const auto upper = prefix_upper_bound(prefix);
    const auto rows = upper ? tx.exec_prepared("console_search", prefix, *upper,
                                               static_cast<long>(kListLimit))
                            : tx.exec_prepared("console_search", prefix, nullptr,
                                               static_cast<long>(kListLimit));
    json result = json::array();
    for (const auto& row : rows) result.push_back(job_of(row));
    return result;
}

CommandOutcome ConsoleStore::apply(Command command) {
    return store_.apply(std::span<const Command>(&command, 1)).front();
}

}  // namespace hourglass::console
