// The counts hourglass.stats shows (/metrics, `hourglass status`, the console): kept by the
// writes themselves, read apart from the hour's releases, and by a reader that takes one core.
#include <gmock/gmock.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "integration/harness.hpp"
#include "store/job_store.hpp"
#include "store/migrations.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;

class Stats : public HourglassTest {};

// The counts of hourglass.stats come from counters that every write to jobs keeps (migration
// 004): they must match count(*) after hourglass's own writes, an operator's (whatever their
// search_path), a fold and a TRUNCATE, and the view must be able to answer without a scan.
TEST_F(Stats, stats_counts_follow_every_write_without_reading_the_whole_table) {
    start_hourglass();
    const auto counts_in_view = [&] {
        return sql("SELECT format('%s/%s/%s/%s', pending, enqueued, done, cancelled) FROM stats")[0][0]
            .as<std::string>();
    };
    const auto counts_in_table = [&] {
        return sql("SELECT format('%s/%s/%s/%s', count(*) FILTER (WHERE state = 'pending'), "
                   "count(*) FILTER (WHERE state = 'enqueued'), count(*) FILTER (WHERE state = "
                   "'done'), count(*) FILTER (WHERE state = 'cancelled')) FROM jobs")[0][0]
            .as<std::string>();
    };
    Client client(amqp_url_);
    client.publish_all({delayed("n-far-1", 600000), delayed("n-far-2", 600000),
                        delayed("n-far-3", 600000), delayed("n-soon", 300)});
    ASSERT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'n-soon'", "done"));
    client.publish_all({cancel_command("n-far-3")});
    ASSERT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'n-far-3'", "cancelled"));
    EXPECT_EQ(counts_in_view(), "2/0/1/1");
    EXPECT_EQ(counts_in_view(), counts_in_table());

    {  // An operator's session, without hourglass's search_path.
        pqxx::connection operator_session(pg_url_);
        pqxx::work tx(operator_session);
        const auto jobs = tx.quote_name(schema_) + ".jobs";
        tx.exec("DELETE FROM " + jobs + " WHERE id = 'n-far-2'");
        tx.exec("UPDATE " + jobs + " SET state = 'cancelled' WHERE id = 'n-far-1'");
        tx.exec("INSERT INTO " + jobs + " (id, routing_key, due_at, body, properties) VALUES "
                "('n-by-hand', 'k', now() + interval '1 day', '\\x', '{}')");
        tx.commit();
    }
    EXPECT_EQ(counts_in_view(), "1/0/1/2");
    sql("SELECT fold_job_counts()");
    EXPECT_EQ(sql("SELECT count(*) FROM job_count_deltas")[0][0].as<int>(), 0);
    EXPECT_EQ(counts_in_view(), "1/0/1/2");
    EXPECT_EQ(counts_in_view(), counts_in_table());

    // 20,000 more rows by hand (about 600 pages of jobs): a read of the view that touches
    // every row would count them in its buffers; the counters and indexes need a few dozen.
    sql("INSERT INTO jobs (id, routing_key, due_at, body, properties) SELECT 'n-bulk-' || i, "
        "'k', now() + interval '1 day', '\\x', '{}' FROM generate_series(1, 20000) AS i");
    sql("ANALYZE jobs");
    EXPECT_EQ(counts_in_view(), "20001/0/1/2");
    std::string plan;
    long buffers = 0;  // summed over the plan's nodes (parents repeat children): an upper bound
    for (const auto& line : sql("EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM stats")) {
        const auto text = line[0].as<std::string>();
        plan += text + "\n";
        for (const auto* key : {"hit=", "read="}) {
            if (const auto at = text.find(key); at != std::string::npos && text.find("Buffers") != std::string::npos) {
                buffers += std::stol(text.substr(at + std::string(key).size()));
            }
        }
    }
    EXPECT_GT(buffers, 0) << plan;
    EXPECT_LT(buffers, 300) << plan;

    sql("TRUNCATE jobs");
    EXPECT_EQ(counts_in_view(), "0/0/0/0");
}

// The stats view in two parts (migration 014): the counts read counters and indexes however many
// releases the last hour had, the lateness percentiles read those releases, and hourglass.stats
// is still their one row. The stats refresher reads the parts at paces of their own, so that a
// busy hour's percentiles (1.3-1.75 s at 3.6 M releases) never hold up the job gauges.
TEST_F(Stats, the_stats_counts_are_read_apart_from_the_hours_releases) {
    store::migrate(*db_, schema_, false);
    // 20,000 releases within the last hour, by hand (about 600 pages of jobs), lateness 0-99 ms.
    sql("INSERT INTO jobs (id, routing_key, state, due_at, body, properties, released_at, "
        "released_run, lateness_ms) SELECT 'p-done-' || i, 'k', 'done', now() - interval '1 "
        "minute', '\\x', '{}', now() - (i % 3000) * interval '1 second', 1, i % 100 "
        "FROM generate_series(1, 20000) AS i");
    sql("INSERT INTO jobs (id, routing_key, due_at, body, properties) VALUES "
        "('p-pending', 'k', now() + interval '1 day', '\\x', '{}')");
    sql("ANALYZE jobs");

    const auto buffers_read = [&](const std::string& view) {
        std::string plan;
        long buffers = 0;  // summed over the plan's nodes (parents repeat children): an upper bound
        for (const auto& line : sql("EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM " + view)) {
            const auto text = line[0].as<std::string>();
            plan += text + "\n";
            if (text.find("Buffers") == std::string::npos) continue;
            for (const std::string key : {"hit=", "read="}) {
                if (const auto at = text.find(key); at != std::string::npos)
                    buffers += std::stol(text.substr(at + key.size()));
            }
        }
        return std::pair{buffers, plan};
    };
    const auto [counts_buffers, counts_plan] = buffers_read("stats_counts");
    EXPECT_GT(counts_buffers, 0) << counts_plan;
    EXPECT_LT(counts_buffers, 300) << counts_plan;
    const auto [lateness_buffers, lateness_plan] = buffers_read("stats_lateness");
    EXPECT_GT(lateness_buffers, 500) << lateness_plan;  // it reads the hour's releases

    EXPECT_EQ(sql("SELECT format('%s/%s/%s/%s', pending, enqueued, done, cancelled) "
                  "FROM stats_counts")[0][0].as<std::string>(),
              "1/0/20000/0");
    // 200 releases of each lateness: the median between 49 and 50, the 99th percentile 1 % of
    // the way from 98 to 99.
    EXPECT_EQ(sql("SELECT format('%s/%s/%s', lateness_p50_ms, round(lateness_p99_ms::numeric, 6), "
                  "lateness_max_ms) FROM stats_lateness")[0][0].as<std::string>(),
              "49.5/98.010000/99");
    // hourglass.stats is the two parts' one row, its columns in their order of migration 004,
    // then those added since (017: paused), so that queries by position keep working.
    EXPECT_EQ(sql("SELECT count(*) FROM (SELECT * FROM stats EXCEPT SELECT c.pending, c.enqueued, "
                  "c.done, c.cancelled, c.oldest_pending_lag_ms, c.next_due_at, l.*, c.paused FROM "
                  "stats_counts AS c, stats_lateness AS l) AS differing")[0][0].as<int>(),
              0);
    std::string columns;
    for (const auto& row : sql("SELECT column_name FROM information_schema.columns WHERE "
                               "table_schema = current_schema() AND table_name = 'stats' "
                               "ORDER BY ordinal_position"))
        columns += row[0].as<std::string>() + " ";
    EXPECT_EQ(columns,
              "pending enqueued done cancelled oldest_pending_lag_ms next_due_at lateness_p50_ms "
              "lateness_p99_ms lateness_max_ms paused ");

    // What the stats refresher publishes: the counts and, read apart, the lateness.
    auto& process = start_hourglass();
    nlohmann::json summary;
    for (auto deadline = std::chrono::steady_clock::now() + 20s;
         std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(250ms)) {
        summary = nlohmann::json::parse(http_get(process.http_port(), "/api/summary").body, nullptr, false);
        if (summary.is_object() && summary["stats"].is_object() &&
            summary["stats"]["lateness_read_at"].is_string())
            break;
    }
    ASSERT_TRUE(summary["stats"].is_object()) << summary.dump();
    EXPECT_EQ(summary["stats"]["done"], 20000) << summary.dump();
    EXPECT_EQ(summary["stats"]["lateness_max_ms"], 99) << summary.dump();
    EXPECT_TRUE(summary["stats"]["lateness_read_at"].is_string()) << summary.dump();
}

// At 10 M jobs one read of the stats view takes seconds; with parallel workers it took every
// core of a 2-core machine from ingest (bench/journal/2026-11-22-to-12-04.md).
TEST_F(Stats, the_background_stats_reader_scans_without_parallel_workers_or_jit) {
    const auto setting = [&](bool background, const std::string& name) {
        store::StoreOptions options{.pg_url = pg_url_, .schema = schema_};
        options.background = background;
        const auto connection = store::connect(options);
        pqxx::nontransaction tx(*connection);
        return tx.exec1("SHOW " + tx.quote_name(name))[0].as<std::string>();
    };
    EXPECT_EQ(setting(true, "max_parallel_workers_per_gather"), "0");
    EXPECT_EQ(setting(true, "jit"), "off");
    // PostgreSQL's defaults for the pipeline's connections.
    EXPECT_NE(setting(false, "max_parallel_workers_per_gather"), "0");
    EXPECT_EQ(setting(false, "jit"), "on");
}

}  // namespace
}  // namespace hourglass::testing
