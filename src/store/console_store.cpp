#include "store/console_store.hpp"

#include <pqxx/pqxx>

#include "common/text.hpp"
#include "store/job_store.hpp"

namespace hourglass::store {

namespace {

std::optional<TimePoint> time_or_null(const pqxx::field& field) {
    if (field.is_null()) return std::nullopt;
    return from_epoch_ms(field.as<std::int64_t>());
}

template <typename T>
std::optional<T> value_or_null(const pqxx::field& field) {
    if (field.is_null()) return std::nullopt;
    return field.as<T>();
}

// The columns of console_job.sql and console_search.sql.
JobRow job_of(const pqxx::row& row) {
    JobRow job;
    job.id = row[0].as<std::string>();
    job.routing_key = row[1].as<std::string>();
    job.exchange = row[2].as<std::string>();
    job.state = row[3].as<std::string>();
    job.runs = row[4].as<int>();
    job.cron = value_or_null<std::string>(row[5]);
    job.cron_tz = value_or_null<std::string>(row[6]);
    job.cron_limit = value_or_null<int>(row[7]);
    job.released_run = value_or_null<int>(row[8]);
    job.lateness_ms = value_or_null<double>(row[9]);
    job.lease_owner = value_or_null<std::string>(row[10]);
    std::optional<TimePoint>* times[] = {&job.due_at,     &job.cron_until,  &job.accepted_at,
                                         &job.created_at, &job.updated_at,  &job.enqueued_at,
                                         &job.released_at, &job.lease_until};
    for (std::size_t i = 0; i < std::size(times); ++i) *times[i] = time_or_null(row[11 + static_cast<int>(i)]);
    job.body = pqxx::binarystring(row[19]).str();
    job.properties = row[20].as<std::string>();
    job.owner = row[21].as<std::string>();
    return job;
}

// The columns of console_cron.sql and console_paused_cron.sql.
CronScheduleRow cron_schedule_of(const pqxx::row& row) {
    return {.id = row[0].as<std::string>(),
            .routing_key = row[1].as<std::string>(),
            .cron = row[2].as<std::string>(),
            .cron_tz = row[3].as<std::string>(),
            .due_at = from_epoch_ms(row[4].as<std::int64_t>()),
            .runs = row[5].as<int>(),
            .cron_until = time_or_null(row[6]),
            .cron_limit = value_or_null<int>(row[7]),
            .paused = row[8].as<bool>()};
}

class PgConsoleStore final : public ConsoleStore {
public:
    explicit PgConsoleStore(const StoreOptions& options) : store_(options) {
        pqxx::nontransaction tx(store_.connection());
        // A page must never hold PostgreSQL for long, whatever a query turns out to cost.
        tx.exec("SET statement_timeout = '5s'");
    }

    std::vector<InstanceRow> instances() override {
        pqxx::read_transaction tx(store_.connection());
        std::vector<InstanceRow> result;
        for (const auto& row : tx.exec_prepared("console_instances")) {
            const auto heartbeat_ms = row[2].as<std::int64_t>();
            result.push_back({row[0].as<std::string>(), from_epoch_ms(row[1].as<std::int64_t>()),
                              from_epoch_ms(heartbeat_ms),
                              Milliseconds{row[3].as<std::int64_t>() - heartbeat_ms}});
        }
        return result;
    }

    std::vector<UpcomingSlot> upcoming(TimePoint from, Milliseconds width, TimePoint end,
                                       std::int64_t cap) override {
        pqxx::read_transaction tx(store_.connection());
        std::vector<UpcomingSlot> result;
        for (const auto& row : tx.exec_prepared("console_upcoming",
                                                static_cast<long long>(to_epoch_ms(from)),
                                                static_cast<long long>(width.count()),
                                                static_cast<long long>(to_epoch_ms(end)),
                                                static_cast<long long>(cap))) {
            result.push_back({row[0].as<std::int64_t>(), row[1].as<std::int64_t>(),
                              row[2].as<std::int64_t>()});
        }
        return result;
    }

    std::vector<double> latest_lateness(std::size_t count) override {
        pqxx::read_transaction tx(store_.connection());
        std::vector<double> result;
        for (const auto& row : tx.exec_prepared("console_lateness", static_cast<long>(count))) {
            result.push_back(row[0].as<double>());
        }
        return result;
    }

    std::vector<RejectionRow> latest_rejections(std::size_t count) override {
        pqxx::read_transaction tx(store_.connection());
        std::vector<RejectionRow> result;
        for (const auto& row : tx.exec_prepared("console_rejections", static_cast<long>(count))) {
            result.push_back({from_epoch_ms(row[0].as<std::int64_t>()), row[1].as<std::string>(),
                              row[2].as<std::string>(), row[3].as<std::string>()});
        }
        return result;
    }

    std::vector<CronScheduleRow> cron_schedules(std::size_t count) override {
        pqxx::read_transaction tx(store_.connection());
        const auto paused = tx.exec_prepared("console_paused_cron", static_cast<long>(count));
        const auto live_count = count - std::min(count, static_cast<std::size_t>(paused.size()));
        std::vector<CronScheduleRow> result;
        for (const auto& row : tx.exec_prepared("console_cron", static_cast<long>(live_count))) {
            result.push_back(cron_schedule_of(row));
        }
        for (const auto& row : paused) result.push_back(cron_schedule_of(row));
        return result;
    }

    std::size_t count_cancellable_by_prefix(const std::string& prefix, std::size_t cap) override {
        pqxx::read_transaction tx(store_.connection());
        return tx.exec_prepared1("console_cancel_prefix_count", prefix, prefix_upper_bound(prefix),
                                 static_cast<long>(cap))[0]
            .as<std::size_t>();
    }

    std::optional<JobRow> job(const std::string& id) override {
        pqxx::read_transaction tx(store_.connection());
        const auto rows = tx.exec_prepared("console_job", id);
        if (rows.empty()) return std::nullopt;
        return job_of(rows[0]);
    }

    std::vector<JobRow> search_routing_key(const std::string& prefix, std::size_t count) override {
        pqxx::read_transaction tx(store_.connection());
        const auto rows = tx.exec_prepared("console_search", prefix, prefix_upper_bound(prefix),
                                           static_cast<long>(count));
        std::vector<JobRow> result;
        for (const auto& row : rows) result.push_back(job_of(row));
        return result;
    }

    CommandOutcome apply(Command command) override {
        return store_.apply(std::span<const Command>(&command, 1)).front();
    }

private:
    JobStore store_;
};

}  // namespace

std::unique_ptr<ConsoleStore> open_console_store(const StoreOptions& options) {
    return std::make_unique<PgConsoleStore>(options);
}

}  // namespace hourglass::store
