// Retention (reference §8): ended jobs, one-shot or recurring, vanish --retention after they
// ended; pending, enqueued, paused and live recurring jobs stay; `hourglass prune --dry-run` counts what would go.
#include <gmock/gmock.h>

#include <thread>

#include "integration/harness.hpp"
#include "store/job_store.hpp"
#include "store/migrations.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

class Retention : public HourglassTest {};

// Cancelled and ended recurring jobs stayed for ever: creating and cancelling cron jobs grew
// the table without bound.
TEST_F(Retention, released_and_cancelled_jobs_vanish_while_pending_enqueued_and_cron_stay) {
    auto& process = start_hourglass({"--retention", "2s", "--horizon", "30s"});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    std::vector<Message> commands;
    for (int i = 0; i < 20; ++i) commands.push_back(delayed("released-" + std::to_string(i), 100));
    for (int i = 0; i < 5; ++i) commands.push_back(delayed("cancelled-" + std::to_string(i), 600000));
    commands.push_back(delayed("pending", 600000));
    commands.push_back(delayed("enqueued", 25000));  // within the horizon: handed over at once
    auto cron = command("jobs.cron");
    cron.properties.message_id = "cron";
    set_header(cron.properties, "x-cron", std::string("0 0 1 1 *"));
    commands.push_back(cron);
    for (const auto* id : {"cron-cancelled", "cron-ended"}) {
        cron.properties.message_id = id;
        commands.push_back(cron);
    }
    client.publish_all(commands);
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs", std::to_string(commands.size())));
    for (int i = 0; i < 5; ++i) client.publish(cancel_command("cancelled-" + std::to_string(i)));
    client.publish(cancel_command("cron-cancelled"));
    // As its last run (--limit, --until) leaves a recurring job.
    sql("UPDATE jobs SET state = 'done', updated_at = now() WHERE id = 'cron-ended'");
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs WHERE state IN ('done', 'cancelled')", "27"));
    ASSERT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'enqueued'", "enqueued"));

    // Ended rows go within seconds of being 2 s old (rounds every 5 s); the others stay.
    EXPECT_TRUE(eventually("SELECT count(*) FROM jobs WHERE state IN ('done', 'cancelled')", "0", 15s))
        << process.log_tail();
    EXPECT_EQ(sql("SELECT string_agg(id, ',' ORDER BY id) FROM jobs")[0][0].as<std::string>(),
              "cron,enqueued,pending");
    const auto metrics = http_get(process.http_port(), "/metrics").body;
    EXPECT_THAT(metrics, HasSubstr("hourglass_retention_rows_deleted_total 27"));
    EXPECT_THAT(metrics, HasSubstr("hourglass_jobs_table_bytes "));
    // The counters follow the deletes (hourglass.stats).
    EXPECT_TRUE(eventually("SELECT done + cancelled FROM stats", "0"));
    EXPECT_EQ(process.terminate(), 0);
}

// The SQL intake's receipts (reference §3.4) go --retention after they were written.
TEST_F(Retention, receipts_of_the_sql_intake_vanish_after_the_retention) {
    auto& process = start_hourglass({"--retention", "3s"});
    sql("INSERT INTO commands (routing_key, headers) SELECT 'receipts.k', '{\"x-delay\": 600000}' "
        "FROM generate_series(1, 10)");
    ASSERT_TRUE(eventually("SELECT count(*) FROM command_receipts", "10"));
    sql("UPDATE command_receipts SET decided_at = now() + interval '1 hour' "
        "WHERE command_id = (SELECT min(command_id) FROM command_receipts)");  // a young one
    EXPECT_TRUE(eventually("SELECT count(*) FROM command_receipts", "1", 20s)) << process.log_tail();
    EXPECT_EQ(sql("SELECT count(*) FROM jobs")[0][0].as<int>(), 10) << "the jobs stay (pending)";
}

TEST_F(Retention, prune_dry_run_counts_and_prune_deletes_what_is_older_than_the_retention) {
    auto& process = start_hourglass({"--retention", "off"});
    Client client(amqp_url_);
    std::vector<Message> jobs;
    for (int i = 0; i < 30; ++i) jobs.push_back(delayed("old-" + std::to_string(i), 600000));
    client.publish_all(jobs);
    for (int i = 0; i < 30; ++i) client.publish(cancel_command("old-" + std::to_string(i)));
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs WHERE state = 'cancelled'", "30"));
    EXPECT_EQ(process.terminate(), 0);
    sql("UPDATE jobs SET updated_at = now() - interval '2 days' WHERE id < 'old-2'");  // 12 rows

    const std::vector<std::string> common = {"--schema", schema_, "--pg-url", pg_url_};
    auto arguments = std::vector<std::string>{"prune", "--retention", "1d", "--dry-run"};
    arguments.insert(arguments.end(), common.begin(), common.end());
    auto result = run_cli(arguments);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_THAT(result.out, HasSubstr("12 ended jobs"));
    EXPECT_EQ(sql("SELECT count(*) FROM jobs")[0][0].as<int>(), 30) << "a dry run deletes nothing";

    arguments = {"prune", "--retention", "1d"};
    arguments.insert(arguments.end(), common.begin(), common.end());
    result = run_cli(arguments);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_THAT(result.out, HasSubstr("deleted 12 ended jobs"));
    EXPECT_EQ(sql("SELECT count(*) FROM jobs")[0][0].as<int>(), 18);
}

// The console's list of rejections (migration 008) stays bounded: by age (--retention) and by
// count (the newest kKeptRejections), each value stored escaped and cut short.
TEST_F(Retention, rejections_are_stored_escaped_and_bounded_by_age_and_count) {
    store::migrate(*db_, schema_, false);
    store::JobStore store({pg_url_, schema_});
    std::vector<store::RecordedRejection> rejections;
    for (int i = 0; i < 10; ++i) {
        rejections.push_back({"id-" + std::to_string(i), "key.\xff<b>" + std::string(300, 'k'),
                              "x-delay: 'soon' is not a number"});
    }
    store.record_rejections(rejections);
    const auto stored = sql("SELECT routing_key FROM rejections ORDER BY id LIMIT 1")[0][0].as<std::string>();
    EXPECT_EQ(stored.rfind("key.\\xff<b>kkk", 0), 0u) << stored;
    EXPECT_LE(stored.size(), store::kMaxRejectionReasonBytes);

    // Beyond the newest 3: the 7 oldest go, in batches of at most `limit`.
    EXPECT_EQ(store.prune_rejections(std::chrono::hours{1}, 3, 5), 5u);
    EXPECT_EQ(store.prune_rejections(std::chrono::hours{1}, 3, 5), 2u);
    EXPECT_EQ(sql("SELECT string_agg(job_id, ',' ORDER BY id) FROM rejections")[0][0].as<std::string>(),
              "id-7,id-8,id-9");
    // Past the retention: gone whatever the count; with retention off, only the count bounds them.
    sql("UPDATE rejections SET rejected_at = now() - interval '2 hours' WHERE job_id <> 'id-9'");
    EXPECT_EQ(store.prune_rejections(std::nullopt, 100, 100), 0u);
    EXPECT_EQ(store.prune_rejections(std::chrono::hours{1}, 100, 100), 2u);
    EXPECT_EQ(sql("SELECT string_agg(job_id, ',') FROM rejections")[0][0].as<std::string>(), "id-9");
}

}  // namespace
}  // namespace hourglass::testing
