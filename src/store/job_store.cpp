#include "store/job_store.hpp"

#include <algorithm>
#include <limits>
#include <pqxx/pqxx>
#include <set>

#include "common/mask.hpp"
#include "common/text.hpp"
#include "hourglass/properties_json.hpp"
#include "store/apply_in.hpp"
#include "store/errors.hpp"
#include "store/job_rows.hpp"
#include "store/migrations.hpp"
#include "store/row_locks.hpp"
#include "store/statements.hpp"

namespace hourglass::store {

using nlohmann::json;

namespace {

// TCP keepalives, unless the URL sets them: a connection whose server vanished (a cut network,
// a failover) is noticed within about half a minute, not the kernel's two hours.
constexpr std::pair<const char*, const char*> kKeepalives[] = {
    {"keepalives", "1"}, {"keepalives_idle", "10"}, {"keepalives_interval", "5"},
    {"keepalives_count", "3"}, {"tcp_user_timeout", "30000"}};

std::string with_keepalives(const std::string& url) {
    const bool uri = url.starts_with("postgresql://") || url.starts_with("postgres://");
    std::string result = url;
    for (const auto& [name, value] : kKeepalives) {
        if (url.find(name + std::string("=")) != std::string::npos) continue;
        if (uri) {
            result += result.find('?') == std::string::npos ? '?' : '&';
        } else if (!result.empty()) {
            result += ' ';
        }
        result += std::string(name) + "=" + value;
    }
    return result;
}

}  // namespace

std::unique_ptr<pqxx::connection> connect(const StoreOptions& options) {
    auto connection = std::make_unique<pqxx::connection>(with_keepalives(options.pg_url));
    // Bounds on every wait of an hourglass session (docs/architecture.md "Fencing", how long a
    // stall delays releases): no statement waits longer than kSessionLockWait for a lock (a
    // heartbeat held up by a row an operator locked fails, and the thread reconnects and tries
    // again), none runs without bound, and a session left idle in a transaction (its client cut
    // mid-transaction) is ended by the server, with the locks it held. Statements that wait
    // less set their own (row_locks.hpp).
    connection->set_variable("lock_timeout", std::string("'") + kSessionLockWait + "'");
    connection->set_variable("statement_timeout", std::string("'") + kSessionStatementTimeout + "'");
    connection->set_variable("idle_in_transaction_session_timeout",
                             std::string("'") + kSessionIdleInTransaction + "'");
    // The server's side of the same: a client cut mid-transaction is noticed by its keepalives.
    // Within seconds, since a fenced instance keeps its claims while a session of it is open
    // (release_claims_of_fenced_owners.sql): a client cut from PostgreSQL is noticed about
    // 3 s after its last packet (so that its claims go back within the 5 s takeover), and a
    // statement running for a vanished client is ended.
    connection->set_variable("tcp_keepalives_idle", "1");
    connection->set_variable("tcp_keepalives_interval", "1");
    connection->set_variable("tcp_keepalives_count", "2");
    connection->set_variable("client_connection_check_interval", "'1s'");
    connection->set_variable("search_path", connection->quote_name(options.schema));
    connection->set_variable("application_name", "'hourglass'");
    if (!options.session_owner.empty()) {
        // Named after its instance, so that others see it is still connected (and its records
        // may still come): "hourglass " and the md5 of its id, within application_name's 63
        // bytes whatever the host name (release_claims_of_fenced_owners.sql).
        pqxx::nontransaction tx(*connection);
        tx.exec_params("SELECT set_config('application_name', 'hourglass ' || md5($1), false)",
                       options.session_owner);
    }
    // Every statement is planned for the table as it is when it runs. By default PostgreSQL
    // keeps a generic plan for a prepared statement after five runs; made while jobs was empty
    // (an idle loader claims every 500 ms), it scanned the whole table once per claimed id
    // after a burst arrived: 25 s per claim of 1,000 runs at 100,000 jobs, until autovacuum's
    // next ANALYZE. Planning costs well under a millisecond per batch.
    connection->set_variable("plan_cache_mode", "force_custom_plan");
    if (options.background) {
        connection->set_variable("max_parallel_workers_per_gather", "0");
        connection->set_variable("jit", "off");
    }
    return connection;
}

JobStore::JobStore(const StoreOptions& options)
    : connection_(connect(options)), counted_open_(options.open_connections), schema_(options.schema) {
    prepare_statements(*connection_);
}

JobStore::~JobStore() = default;

std::unique_ptr<CommandStore> open_command_store(const StoreOptions& options) {
    return std::make_unique<JobStore>(options);
}

std::unique_ptr<ClaimStore> open_claim_store(const StoreOptions& options) {
    return std::make_unique<JobStore>(options);
}

std::unique_ptr<ReleaseStore> open_release_store(const StoreOptions& options) {
    return std::make_unique<JobStore>(options);
}

std::unique_ptr<SqlCommandStore> open_sql_command_store(const StoreOptions& options) {
    return std::make_unique<JobStore>(options);
}

std::unique_ptr<StatsStore> open_stats_store(const StoreOptions& options) {
    return std::make_unique<JobStore>(options);
}

std::unique_ptr<RetentionStore> open_retention_store(const StoreOptions& options) {
    return std::make_unique<JobStore>(options);
}

Claim JobStore::claim_due(const std::string& owner, TimePoint horizon_end, ClaimLimit limit,
                          Milliseconds lease, std::optional<TimePoint> resend_due_before) {
    pqxx::work tx(*connection_);
    // Committed with the WAL flushed (the default synchronous_commit): a claim a PostgreSQL
    // crash undid would leave the run claimable by others while this loader publishes it.
    constexpr auto kMaxBigint = static_cast<std::size_t>(std::numeric_limits<long long>::max());
    const auto rows = tx.exec_prepared("claim_due", owner, format_rfc3339_ms(horizon_end),
                                       static_cast<long long>(std::min(limit.runs, kMaxBigint)),
                                       static_cast<long>(lease.count()),
                                       resend_due_before ? std::optional<std::string>(
                                                               format_rfc3339_ms(*resend_due_before))
                                                         : std::nullopt,
                                       static_cast<long long>(std::min(limit.bytes, kMaxBigint)));
    tx.commit();
    Claim claim;
    claim.runs.reserve(rows.size());
    for (const auto& row : rows) {
        ClaimedRun run;
        run.id = row[0].as<std::string>();
        run.routing_key = row[1].as<std::string>();
        run.exchange = row[2].is_null() ? std::string{} : row[2].as<std::string>();
        run.due_at = time_of(row[3]);
        run.run = row[4].as<int>();
        run.resent = row[11].as<bool>();
        run.observe_itself = row[13].as<bool>();
        if (!row[14].is_null()) run.expires_after = Milliseconds{row[14].as<std::int64_t>()};
        run.body = pqxx::binarystring(row[5]).str();
        auto properties = properties_from_json(json::parse(row[6].c_str(), nullptr, false));
        // Written by hourglass itself; a row edited by hand into another shape still releases.
        run.properties = properties.value_or(BasicProperties{});
        if (!row[7].is_null()) {
            CronSpec cron;
            cron.expression = row[7].as<std::string>();
            cron.zone = row[8].is_null() ? "UTC" : row[8].as<std::string>();
            cron.until = optional_time_of(row[9]);
            if (!row[10].is_null()) cron.limit = row[10].as<int>();
            if (!row[15].is_null()) {
                cron.catchup = catchup_from_string(row[15].as<std::string>()).value_or(Catchup::one);
            }
            run.cron = std::move(cron);
        }
        claim.runs.push_back(std::move(run));
    }
    const auto candidates = rows.empty() ? std::size_t{0} : rows[0][12].as<std::size_t>();
    claim.at_limit = claim.runs.size() >= limit.runs || candidates > claim.runs.size();
    return claim;
}

std::vector<HandedOverRun> JobStore::record_handed_over(const std::string& owner,
                                                        const std::vector<HandedOverRun>& runs) {
    if (runs.empty()) return {};
    const auto observed_id = [](const HandedOverRun& run) -> const std::string& {
        return run.observed_with ? run.observed_with->id : run.id;
    };
    // Each group's last run once, however many runs are observed with it; it may have been
    // confirmed in another batch.
    std::set<std::string> observed;
    for (const auto& run : runs) observed.insert(observed_id(run));
    return record_around_locks(*connection_, [&](pqxx::work& tx, bool around_locks) {
        std::set<std::string> held_elsewhere;
        if (around_locks) {
            // The rows the record changes too (each run's own), not only those it reads.
            auto wanted = observed;
            for (const auto& run : runs) wanted.insert(run.id);
            held_elsewhere = lock_rows_not_held_elsewhere(tx, wanted);
        } else {
            tx.exec_prepared("lock_observed_runs", json(observed).dump());
        }
        json rows = json::array();
        std::vector<HandedOverRun> left;
        for (const auto& run : runs) {
            if (held_elsewhere.contains(run.id) || held_elsewhere.contains(observed_id(run))) {
                left.push_back(run);
                continue;
            }
            json row = {{"id", run.id},
                        {"run", run.run},
                        {"next_due", optional_time(run.next_due)},
                        {"audited", run.audited}};
            if (run.observed_with) {
                row["with_id"] = run.observed_with->id;
                row["with_run"] = run.observed_with->run;
            }
            if (run.handed_at) row["handed_ms"] = run.handed_at->time_since_epoch().count();
            if (run.expired) row["expired"] = true;
            rows.push_back(std::move(row));
        }
        if (!rows.empty()) tx.exec_prepared("record_handed_over", owner, rows.dump());
        return left;
    });
}

std::vector<std::string> JobStore::release_claims(const std::string& owner,
                                                  const std::vector<std::string>& ids) {
    if (ids.empty()) return {};
    return record_around_locks(*connection_, [&](pqxx::work& tx, bool around_locks) {
        std::vector<std::string> left, released;
        if (around_locks) {
            const auto held_elsewhere =
                lock_rows_not_held_elsewhere(tx, std::set<std::string>(ids.begin(), ids.end()));
            for (const auto& id : ids)
                (held_elsewhere.contains(id) ? left : released).push_back(id);
        } else {
            released = ids;
        }
        if (!released.empty()) tx.exec_prepared("release_claims", owner, json(released).dump());
        return left;
    });
}

void JobStore::register_instance(const std::string& owner) {
    pqxx::work tx(*connection_);
    tx.exec_prepared("register_instance", owner);
    tx.commit();
}

// Committed with the WAL flushed (the default synchronous_commit): a beat a PostgreSQL crash
// could undo would make others see this instance older than it believes itself.
ClaimStore::Heartbeat JobStore::heartbeat(const std::string& owner, Milliseconds takeover_after,
                                          Milliseconds fresh_within) {
    pqxx::work tx(*connection_);
    Heartbeat beat;
    // Read first, without a lock: a fence reaches its instance even while another transaction
    // holds its registration (the beat's update below would wait for it, then time out).
    if (tx.exec_prepared1("is_fenced", owner)[0].as<bool>()) return beat;
    const auto beating_for = tx.exec_prepared("heartbeat", owner, static_cast<long>(fresh_within.count()));
    beat.registered = !beating_for.empty();
    // A taker must itself have beaten without a break for `fresh_within` (heartbeat.sql).
    const bool may_fence =
        beat.registered && beating_for[0][0].as<double>() >= static_cast<double>(fresh_within.count());
    if (may_fence) {
        for (const auto& row : tx.exec_prepared("forget_dead_instances", owner,
                                                static_cast<long>(takeover_after.count()))) {
            beat.dead.push_back(row[0].as<std::string>());
        }
        // Of every fenced instance, not only those fenced now: an instance fenced with a
        // session still open keeps its claims until that session ends.
        tx.exec_prepared("release_claims_of_fenced_owners");
        tx.exec_prepared("forget_fenced_instances");
    }
    tx.commit();
    return beat;
}

std::vector<std::string> JobStore::claims_older_than(const std::string& owner, Milliseconds lease,
                                                     Milliseconds age) {
    pqxx::read_transaction tx(*connection_);
    std::vector<std::string> ids;
    for (const auto& row : tx.exec_prepared("claims_older_than", owner, static_cast<long>(lease.count()),
                                            static_cast<long>(age.count()))) {
        ids.push_back(row[0].as<std::string>());
    }
    return ids;
}

std::size_t JobStore::release_orphaned_claims(const std::string& owner,
                                              const std::vector<std::string>& ids,
                                              Milliseconds lease, Milliseconds age) {
    if (ids.empty()) return 0;
    pqxx::work tx(*connection_);
    const auto result = tx.exec_prepared("release_orphaned_claims", owner, json(ids).dump(),
                                         static_cast<long>(lease.count()),
                                         static_cast<long>(age.count()));
    tx.commit();
    return static_cast<std::size_t>(result.affected_rows());
}

ClockOffset JobStore::measure_clock_offset() {
    // PostgreSQL read its clock between `before` and `after`. Of the offsets that allows, take
    // the smallest (database − after): the corrected clock then never runs ahead of
    // PostgreSQL's, so a measuring error can only make a release late by the round trip, never
    // early. The quickest of three round trips bounds that error best.
    pqxx::nontransaction tx(*connection_);
    std::optional<std::chrono::microseconds> best_offset;
    auto best_round_trip = std::chrono::system_clock::duration::max();
    for (int sample = 0; sample < 3; ++sample) {
        const auto before = std::chrono::system_clock::now();
        const auto database_us =
            tx.exec1("SELECT floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint")[0]
                .as<std::int64_t>();
        const auto after = std::chrono::system_clock::now();
        if (after - before < best_round_trip) {
            best_round_trip = after - before;
            best_offset = std::chrono::microseconds{database_us} -
                          std::chrono::duration_cast<std::chrono::microseconds>(after.time_since_epoch());
        }
    }
    return {*best_offset, std::chrono::duration_cast<std::chrono::microseconds>(best_round_trip)};
}

void JobStore::release_all_claims(const std::string& owner) {
    pqxx::work tx(*connection_);
    tx.exec_prepared("release_claims_of_owners", json::array({owner}).dump());
    tx.commit();
}

void JobStore::set_aside(const std::string& owner, const std::vector<SetAsideRun>& runs) {
    if (runs.empty()) return;
    json rows = json::array();
    for (const auto& run : runs) {
        // Stored escaped and cut short, as every rejection (a row written by hand holds any bytes).
        rows.push_back({{"id", run.id},
                        {"job_id", printable(run.id, kMaxNameBytes)},
                        {"routing_key", printable(run.routing_key, kMaxNameBytes)},
                        {"reason", printable(run.reason, kMaxRejectionReasonBytes)}});
    }
    pqxx::work tx(*connection_);
    tx.exec_prepared("set_aside_runs", owner, rows.dump());
    tx.commit();
}

void JobStore::leave(const std::string& owner) {
    pqxx::work tx(*connection_);
    tx.exec_prepared("leave", owner);
    tx.commit();
}

std::string JobStore::session_setting(const std::string& name) {
    pqxx::nontransaction tx(*connection_);
    return tx.exec_params1("SELECT current_setting($1)", name)[0].as<std::string>();
}

std::string mask_pg_url(const std::string& url) { return mask_secrets(url); }

}  // namespace hourglass::store
