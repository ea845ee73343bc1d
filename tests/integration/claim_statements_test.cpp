// The loader's per-batch statements against a real PostgreSQL, in the state a hotspot leaves:
// tens of thousands of runs claimed since the statistics were last taken. Each batch must find
// its rows by id; a plan that read every claimed run made each hand-over record 3.7x slower
// with 50,000 claimed, and a plan kept from an empty table made a claim take 25 s.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>
#include <utility>

#include "integration/harness.hpp"
#include "store/job_store.hpp"
#include "store/migrations.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;

class ClaimStatements : public HourglassTest {
protected:
    struct Reads {
        long rows_updated = 0;      // pg_stat_user_tables.n_tup_upd of jobs
        long leased_entries = 0;    // pg_stat_user_indexes.idx_tup_read of jobs_leased_until
    };
    // A backend publishes its counters at the end of a transaction at most once a second
    // (else 10 s after it goes idle), so the store's connection runs one more, a second later.
    static void publish_counters(store::JobStore& store) {
        std::this_thread::sleep_for(1100ms);
        store.measure_clock_offset();
    }
    // The server's counters once they show at least `updated` row updates.
    Reads reads_once_updated(store::JobStore& store, long updated) {
        publish_counters(store);
        Reads reads;
        for (int attempt = 0; attempt < 100; ++attempt) {
            const auto row = sql("SELECT t.n_tup_upd, i.idx_tup_read FROM pg_stat_user_tables t "
                                 "JOIN pg_stat_user_indexes i USING (relid) WHERE t.schemaname = " +
                                 db_->quote(schema_) + " AND t.relname = 'jobs' "
                                 "AND i.indexrelname = 'jobs_leased_until'")[0];
            reads = {row[0].as<long>(), row[1].as<long>()};
            if (reads.rows_updated >= updated) break;
            std::this_thread::sleep_for(100ms);
        }
        return reads;
    }
};

TEST_F(ClaimStatements, recording_a_hand_over_reads_its_runs_by_id_not_every_run_claimed) {
    store::migrate(*db_, schema_, false);
    store::JobStore store({pg_url_, schema_});
    constexpr int kClaimed = 20000;
    constexpr std::size_t kRecorded = 500;
    sql("INSERT INTO jobs (id, routing_key, due_at, body, properties) "
        "SELECT 'job-' || g, 'jobs.test', now() + interval '30 seconds', '\\x00', '{}' "
        "FROM generate_series(1, " + std::to_string(kClaimed) + ") g");
    {
        // What autovacuum leaves before a hotspot: statistics and index sizes of a table where
        // nothing is claimed.
        pqxx::nontransaction tx(*db_);
        tx.exec("VACUUM ANALYZE " + tx.quote_name(schema_) + ".jobs");
    }

    std::vector<HandedOverRun> handed_over;
    for (int claimed = 0; claimed < kClaimed;) {
        const auto runs = store.claim_due("loader", now_ms() + 60s, 1000, 60s);
        ASSERT_FALSE(runs.empty());
        claimed += static_cast<int>(runs.size());
        for (const auto& run : runs) {
            if (handed_over.size() < kRecorded) handed_over.push_back({run.id, run.run, std::nullopt, true, std::nullopt});
        }
    }
    const auto before = reads_once_updated(store, kClaimed);
    ASSERT_GE(before.rows_updated, kClaimed) << "the claims never showed in pg_stat_user_tables";
    store.record_handed_over("loader", handed_over);
    const auto after = reads_once_updated(store, before.rows_updated + static_cast<long>(kRecorded));
    ASSERT_GE(after.rows_updated, before.rows_updated + static_cast<long>(kRecorded));

    EXPECT_EQ(sql("SELECT count(*) FROM jobs WHERE state = 'enqueued'")[0][0].as<std::size_t>(), kRecorded);
    // Found by id (the primary key). Reading the index of leased rows reads every run claimed.
    EXPECT_LT(after.leased_entries - before.leased_entries, static_cast<long>(kRecorded));
}

// Claims at insert (reference §6.2): the plain schedules ingest marks are inserted leased to
// the loader of the offer, as a claim would lease them, so that no claim takes them; a
// duplicate, a replace and anything applied without an offer stay for the claims.
TEST_F(ClaimStatements, jobs_claimed_at_insert_are_leased_to_the_offers_loader_and_no_claim_takes_them) {
    store::migrate(*db_, schema_, false);
    store::JobStore store({pg_url_, schema_});
    const auto due = now_ms() + 10s;
    const auto schedule = [&](const std::string& id, bool claim, bool replace = false) {
        ScheduleCommand job;
        job.id = id;
        job.routing_key = "jobs.test";
        job.due_at = due;
        job.accepted_at = now_ms();
        job.replace = replace;
        job.claim_at_insert = claim;
        return Command{job, id, std::nullopt, std::nullopt};
    };
    store.apply(std::vector<Command>{schedule("c-dup", false)});
    const InsertClaimOffer offer{.owner = "loader-a", .lease = 31s, .horizon_end = due, .runs = 4,
                                 .bytes = 1u << 20, .epoch = 1};
    const std::vector<Command> commands = {schedule("c-1", true), schedule("c-2", false),
                                           schedule("c-dup", true), schedule("c-replace", true, true)};
    const auto outcomes = store.apply(commands, &offer);
    ASSERT_EQ(outcomes.size(), 4u);
    EXPECT_EQ(outcomes[0].status, CommandStatus::scheduled);
    EXPECT_TRUE(outcomes[0].claimed);
    EXPECT_FALSE(outcomes[1].claimed);
    EXPECT_EQ(outcomes[2].status, CommandStatus::duplicate);
    EXPECT_FALSE(outcomes[2].claimed);
    EXPECT_EQ(outcomes[3].status, CommandStatus::scheduled);  // a replace of no job inserts it
    EXPECT_FALSE(outcomes[3].claimed);
    // Marked, but applied without an offer (the loader had no room): not leased.
    EXPECT_FALSE(store.apply(std::vector<Command>{schedule("c-no-offer", true)})[0].claimed);

    EXPECT_EQ(sql("SELECT string_agg(id || '=' || COALESCE(lease_owner, '-'), ',' ORDER BY id) "
                  "FROM jobs")[0][0].as<std::string>(),
              "c-1=loader-a,c-2=-,c-dup=-,c-no-offer=-,c-replace=-");
    EXPECT_TRUE(sql("SELECT lease_until BETWEEN now() + interval '30 s' AND now() + interval '32 s' "
                    "AND state = 'pending' FROM jobs WHERE id = 'c-1'")[0][0].as<bool>());
    std::set<std::string> claimed;
    for (const auto& run : store.claim_due("loader-b", due + 1s, 10, 60s)) claimed.insert(run.id);
    EXPECT_EQ(claimed, (std::set<std::string>{"c-2", "c-dup", "c-no-offer", "c-replace"}));
}

TEST_F(ClaimStatements, a_burst_into_an_empty_table_is_claimed_by_id_not_by_scanning_the_table) {
    store::migrate(*db_, schema_, false);
    // Nothing re-plans behind the test's back: an ANALYZE would drop a cached plan.
    sql("ALTER TABLE jobs SET (autovacuum_enabled = false)");
    store::JobStore store({pg_url_, schema_});
    // An idle loader claims every 500 ms: many claims of an empty table.
    for (int i = 0; i < 10; ++i) {
        ASSERT_TRUE(store.claim_due("loader", now_ms() + 60s, 1000, 60s).empty());
    }
    constexpr long kJobs = 10000;
    sql("INSERT INTO jobs (id, routing_key, due_at, body, properties) "
        "SELECT 'job-' || g, 'jobs.test', now() + interval '30 seconds', '\\x00', '{}' "
        "FROM generate_series(1, " + std::to_string(kJobs) + ") g");

    // Rows the claim read by scanning the table, from the server's counters.
    auto scanned_rows = [&] {
        publish_counters(store);
        return sql("SELECT seq_tup_read FROM pg_stat_user_tables WHERE schemaname = " +
                   db_->quote(schema_) + " AND relname = 'jobs'")[0][0].as<long>();
    };
    const auto before = scanned_rows();
    EXPECT_EQ(store.claim_due("loader", now_ms() + 60s, 1000, 60s).size(), 1000u);
    const auto after = scanned_rows();
    // A plan kept from the empty table scans the table (and compares each row with every
    // claimed id); planned for 10,000 rows, the claim reads the index of claimable runs and
    // each row by id.
    EXPECT_LT(after - before, kJobs);
}

// The loader passes what is left of its memory bound: a claim stops before the first run that
// the bytes of the runs before it would take past that, and says whether more is claimable.
TEST_F(ClaimStatements, a_claim_stops_at_its_byte_budget_and_says_whether_more_is_claimable) {
    store::migrate(*db_, schema_, false);
    store::JobStore store({pg_url_, schema_});
    // Ten runs of 10,000 bytes (and 8 of properties), due a millisecond apart.
    sql("INSERT INTO jobs (id, routing_key, due_at, body, properties) "
        "SELECT 'job-' || g, 'jobs.test', now() + g * interval '1 millisecond', "
        "convert_to(repeat('x', 10000), 'UTF8'), '{}' FROM generate_series(1, 10) g");
    const auto claim = [&](store::ClaimLimit limit) {
        auto taken = store.claim_due("loader", now_ms() + 60s, limit, 60s, std::nullopt);
        std::set<std::string> ids;
        for (const auto& run : taken.runs) ids.insert(run.id);
        return std::make_pair(ids, taken.at_limit);
    };
    using Ids = std::set<std::string>;

    // 0, 10,008, 20,016 and 30,024 bytes before the first four: under 35,000.
    EXPECT_EQ(claim({.runs = 1000, .bytes = 35000}),
              std::make_pair(Ids{"job-1", "job-2", "job-3", "job-4"}, true));
    EXPECT_EQ(claim({.runs = 3}), std::make_pair(Ids{"job-5", "job-6", "job-7"}, true));
    EXPECT_EQ(claim({.runs = 1000, .bytes = 35000}),
              std::make_pair(Ids{"job-8", "job-9", "job-10"}, false));

    // A run larger than the whole budget is still claimed, alone: a claim never takes nothing.
    sql("INSERT INTO jobs (id, routing_key, due_at, body, properties) VALUES "
        "('large', 'jobs.test', now(), convert_to(repeat('x', 50000), 'UTF8'), '{}'), "
        "('small', 'jobs.test', now() + interval '1 second', '\\x00', '{}')");
    EXPECT_EQ(claim({.runs = 1000, .bytes = 1000}), std::make_pair(Ids{"large"}, true));
    EXPECT_EQ(claim({.runs = 1000, .bytes = 1000}), std::make_pair(Ids{"small"}, false));
}

// A run is re-sent as lost only once its hand-over was recorded before the cutoff too: a
// publish the broker held (a memory alarm across the instant of a burst) is published at its
// instant but confirmed, and recorded, only when the broker lets it go, and its copy is
// recorded after that. Its due time and publish time long past, it looked lost at once.
TEST_F(ClaimStatements, a_run_whose_hand_over_was_just_recorded_is_not_resent) {
    store::migrate(*db_, schema_, false);
    store::JobStore store({pg_url_, schema_});
    sql("INSERT INTO jobs (id, routing_key, due_at, body, properties, state, runs, enqueued_at, "
        "audited, updated_at) SELECT id, 'jobs.test', now() - interval '5 minutes', '\\x00', '{}', "
        "'enqueued', 1, now() - interval '5 minutes', true, now() - age "
        "FROM (VALUES ('recorded-long-ago', interval '5 minutes'), ('recorded-now', interval '0')) v(id, age)");
    const auto taken = store.claim_due("loader", now_ms() + 60s, {.runs = 10}, 60s, now_ms() - 60s);
    ASSERT_EQ(taken.runs.size(), 1u);
    EXPECT_EQ(taken.runs[0].id, "recorded-long-ago");
    EXPECT_TRUE(taken.runs[0].resent);
}

// An operator's open transaction holds one claimed row: the record of a batch neither waits for
// it nor fails; it records the others and returns the runs it left (that one, and a run observed
// with it). A row deleted meanwhile is not waited for either.
TEST_F(ClaimStatements, a_record_leaves_the_runs_whose_rows_another_transaction_holds) {
    store::migrate(*db_, schema_, false);
    store::JobStore store({pg_url_, schema_});
    sql("INSERT INTO jobs (id, routing_key, due_at, body, properties) "
        "SELECT id, 'jobs.test', now() + interval '1 second', '\\x00', '{}' "
        "FROM unnest(ARRAY['free', 'held', 'member', 'gone']) id");
    ASSERT_EQ(store.claim_due("loader", now_ms() + 60s, 1000, 60s).size(), 4u);
    pqxx::connection operator_session(pg_url_);
    pqxx::work held(operator_session);
    held.exec("UPDATE " + held.quote_name(schema_) +
              ".jobs SET routing_key = routing_key "
              "WHERE id = 'held'");
    sql("DELETE FROM jobs WHERE id = 'gone'");

    const std::vector<HandedOverRun> handed_over = {
        {"free", 1, std::nullopt, true, std::nullopt},
        {"held", 1, std::nullopt, true, std::nullopt},
        {"member", 1, std::nullopt, true, RunRef{"held", 1}},
        {"gone", 1, std::nullopt, true, std::nullopt}};
    const auto asked = std::chrono::steady_clock::now();
    const auto left = store.record_handed_over("loader", handed_over);
    EXPECT_LT(std::chrono::steady_clock::now() - asked, 1s) << "the record waited for the lock";
    std::set<std::string> left_ids;
    for (const auto& run : left) left_ids.insert(run.id);
    EXPECT_EQ(left_ids, (std::set<std::string>{"held", "member"}));
    const auto states = [&] {
        std::map<std::string, std::string> by_id;
        for (const auto& row : sql("SELECT id, state FROM jobs"))
            by_id[row[0].c_str()] = row[1].c_str();
        return by_id;
    };
    EXPECT_EQ(states(), (std::map<std::string, std::string>{
                            {"free", "enqueued"}, {"held", "pending"}, {"member", "pending"}}));

    held.abort();
    EXPECT_TRUE(store.record_handed_over("loader", left).empty());
    EXPECT_EQ(states(), (std::map<std::string, std::string>{
                            {"free", "enqueued"}, {"held", "enqueued"}, {"member", "enqueued"}}));
}

// Giving back claims meets the same lock (the broker refused runs an operator's transaction
// holds): the others are given back at once, the held one is returned to try later.
TEST_F(ClaimStatements, giving_back_claims_leaves_the_runs_whose_rows_another_transaction_holds) {
    store::migrate(*db_, schema_, false);
    store::JobStore store({pg_url_, schema_});
    sql("INSERT INTO jobs (id, routing_key, due_at, body, properties) "
        "SELECT id, 'jobs.test', now() + interval '1 second', '\\x00', '{}' "
        "FROM unnest(ARRAY['free', 'held']) id");
    ASSERT_EQ(store.claim_due("loader", now_ms() + 60s, 1000, 60s).size(), 2u);
    pqxx::connection operator_session(pg_url_);
    pqxx::work held(operator_session);
    held.exec("UPDATE " + held.quote_name(schema_) +
              ".jobs SET routing_key = routing_key "
              "WHERE id = 'held'");
    const auto leases = [&] {
        return sql("SELECT string_agg(id || ' ' || COALESCE(lease_owner, '-'), ',' ORDER BY id) "
                   "FROM jobs")[0][0]
            .as<std::string>();
    };
    EXPECT_EQ(store.release_claims("loader", {"free", "held"}), std::vector<std::string>{"held"});
    EXPECT_EQ(leases(), "free -,held loader");
    held.abort();
    EXPECT_TRUE(store.release_claims("loader", {"held"}).empty());
    EXPECT_EQ(leases(), "free -,held -");
}

// The heartbeat's reconciliation gives back orphaned claims (a lost commit reply); a row an
// operator's transaction holds must not make it wait: the heartbeat would stop beating and the
// instance be taken for dead. It is passed by, and given back once the transaction ends.
TEST_F(ClaimStatements, giving_back_orphaned_claims_passes_by_the_rows_another_transaction_holds) {
    store::migrate(*db_, schema_, false);
    store::JobStore store({pg_url_, schema_});
    sql("INSERT INTO jobs (id, routing_key, due_at, body, properties) "
        "SELECT id, 'jobs.test', now() + interval '1 second', '\\x00', '{}' "
        "FROM unnest(ARRAY['free', 'held']) id");
    ASSERT_EQ(store.claim_due("loader", now_ms() + 60s, 1000, 60s).size(), 2u);
    pqxx::connection operator_session(pg_url_);
    pqxx::work held(operator_session);
    held.exec("UPDATE " + held.quote_name(schema_) + ".jobs SET routing_key = routing_key WHERE id = 'held'");
    // Claimed with a 60 s lease: "older than 0 ms" is every claim of this loader.
    const auto started = std::chrono::steady_clock::now();
    EXPECT_EQ(store.release_orphaned_claims("loader", {"free", "held"}, 60s, 0ms), 1u);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 1s);
    held.abort();
    EXPECT_EQ(store.release_orphaned_claims("loader", {"free", "held"}, 60s, 0ms), 1u);
    EXPECT_EQ(sql("SELECT count(*) FROM jobs WHERE lease_owner IS NOT NULL")[0][0].as<int>(), 0);
}

}  // namespace
}  // namespace hourglass::testing
