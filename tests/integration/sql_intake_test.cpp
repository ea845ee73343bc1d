// The SQL intake end to end (reference §3.4): an application schedules in its own transaction
// by inserting into hourglass.commands; a rollback schedules nothing; a hostile row is rejected
// with its reason and holds up nothing behind it; a kill -9 in the middle loses and duplicates
// nothing.
#include <gmock/gmock.h>

#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "integration/harness.hpp"
#include "store/job_store.hpp"
#include "store/migrations.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;

class SqlIntake : public HourglassTest {
protected:
    // Runs `statements` in one transaction with the schema on the search path; commits or not.
    void transaction(const std::vector<std::string>& statements, bool commit) {
        pqxx::work tx(*db_);
        tx.exec("SET LOCAL search_path TO " + tx.quote_name(schema_));
        for (const auto& statement : statements) tx.exec(statement);
        if (commit) tx.commit();
    }
    int count(const std::string& query) { return sql(query)[0][0].as<int>(); }
};

// The application's own row and its reminder commit together, or neither does.
TEST_F(SqlIntake, a_rollback_schedules_nothing_and_a_commit_schedules_with_its_own_change) {
    start_hourglass();
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "orders.#");
    sql("CREATE TABLE orders (id text PRIMARY KEY)");
    const auto order = [](const std::string& id) {
        return std::vector<std::string>{
            "INSERT INTO orders VALUES ('" + id + "')",
            "INSERT INTO commands (routing_key, body, properties, headers) VALUES "
            "('orders.remind', 'remind " + id + "', '{\"message_id\": \"remind-" + id +
                "\"}', '{\"x-delay\": 500}')"};
    };
    transaction(order("rolled-back"), /*commit=*/false);
    const auto committed_at = now_ms();
    transaction(order("committed"), /*commit=*/true);

    const auto released = client.receive(10s);
    ASSERT_TRUE(released) << processes_.back()->log_tail();
    EXPECT_EQ(released->message.body, "remind committed");
    EXPECT_EQ(string_header(released->message, "x-hourglass-id"), "remind-committed");
    EXPECT_LT(released->received_at - committed_at, 3s) << "taken at once (LISTEN/NOTIFY)";
    EXPECT_FALSE(client.receive(2s)) << "the rolled-back command scheduled something";
    EXPECT_EQ(count("SELECT count(*) FROM jobs"), 1);
    EXPECT_EQ(count("SELECT count(*) FROM commands"), 0) << "taken commands are deleted";
    const auto receipt = sql("SELECT job_id, status, due_at IS NOT NULL FROM command_receipts");
    ASSERT_EQ(receipt.size(), 1u);
    EXPECT_EQ(receipt[0][0].as<std::string>(), "remind-committed");
    EXPECT_EQ(receipt[0][1].as<std::string>(), "scheduled");
    EXPECT_TRUE(receipt[0][2].as<bool>());
}

// Every hostile row ends alone, rejected with the reason in its receipt and in the console's
// list; the good commands around it are applied.
TEST_F(SqlIntake, hostile_rows_are_rejected_with_their_reason_and_hold_up_nothing) {
    start_hourglass({"--max-body", "1000"});
    transaction({"INSERT INTO commands (routing_key, properties, headers) VALUES "
                 "('a.good', '{\"message_id\": \"good-1\"}', '{\"x-delay\": 600000}'), "
                 "('a.bad', '{\"bogus\": 1}', '{\"x-delay\": 600000}'), "
                 "('a.bad', '{}', '{\"x-delay\": -5}'), "
                 "('a.bad', '{}', '{\"x-cron\": \"61 * * * *\"}')",
                 "INSERT INTO commands (routing_key, body, headers) VALUES "
                 "('a.bad', decode(repeat('ab', 1001), 'hex'), '{\"x-delay\": 1}')",
                 "INSERT INTO commands (routing_key, properties, headers) VALUES "
                 "('a.good', '{\"message_id\": \"good-2\"}', '{\"x-delay\": 600000}')"},
                /*commit=*/true);
    ASSERT_TRUE(eventually("SELECT count(*) FROM command_receipts", "6"));
    const auto receipts = sql("SELECT status, COALESCE(error, '') FROM command_receipts ORDER BY command_id");
    ASSERT_EQ(receipts.size(), 6u);
    EXPECT_EQ(receipts[0][0].as<std::string>(), "scheduled");
    const std::vector<std::string> reasons = {"unknown property 'bogus'", "x-delay", "x-cron",
                                              "body: 1001 bytes exceed --max-body"};
    for (std::size_t i = 0; i < reasons.size(); ++i) {
        EXPECT_EQ(receipts[i + 1][0].as<std::string>(), "rejected");
        EXPECT_NE(receipts[i + 1][1].as<std::string>().find(reasons[i]), std::string::npos)
            << receipts[i + 1][1].as<std::string>();
    }
    EXPECT_EQ(receipts[5][0].as<std::string>(), "scheduled");
    EXPECT_EQ(job_state("good-1"), "pending");
    EXPECT_EQ(job_state("good-2"), "pending");
    EXPECT_EQ(count("SELECT count(*) FROM rejections"), 4) << "listed for the console";
    EXPECT_EQ(count("SELECT count(*) FROM commands"), 0);
}

// A value AMQP cannot carry (a short string over 255 bytes, a header name over 255 bytes at
// any depth) was scheduled from SQL: the loader could not publish it (rabbitmq-c refused the
// property; the long name made the broker close the connection) and one such row stopped
// every release. The AMQP door never lets one in; the SQL door now rejects it at intake.
TEST_F(SqlIntake, values_amqp_cannot_carry_are_rejected_at_intake_and_releases_go_on) {
    start_hourglass();
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "poison.#");
    const std::string long_name(300, 'n');
    transaction({"INSERT INTO commands (routing_key, properties, headers) VALUES "
                 "('poison.bad', '{\"content_type\": \"" + std::string(300, 'c') + "\"}', "
                 "'{\"x-delay\": 500}'), "
                 "('poison.bad', '{}', '{\"x-delay\": 500, \"" + long_name + "\": 1}'), "
                 "('poison.bad', '{}', '{\"x-delay\": 500, \"t\": {\"" + long_name + "\": 1}}'), "
                 "('poison.bad', '{}', '{\"x-delay\": 500, \"a\": [{\"" + long_name + "\": 1}]}'), "
                 "('poison.good', '{\"message_id\": \"after-poison\"}', '{\"x-delay\": 1500}')"},
                /*commit=*/true);
    ASSERT_TRUE(eventually("SELECT count(*) FROM command_receipts", "5"));
    const auto receipts = sql("SELECT status, COALESCE(error, '') FROM command_receipts ORDER BY command_id");
    const std::vector<std::string> reasons = {"properties.content_type: 300 bytes",
                                              "headers: a name of 300 bytes",
                                              "headers.t: a name of 300 bytes",
                                              "headers.a: a name of 300 bytes"};
    for (std::size_t i = 0; i < reasons.size(); ++i) {
        EXPECT_EQ(receipts[i][0].as<std::string>(), "rejected") << i;
        EXPECT_NE(receipts[i][1].as<std::string>().find(reasons[i]), std::string::npos)
            << receipts[i][1].as<std::string>();
        EXPECT_NE(receipts[i][1].as<std::string>().find("255"), std::string::npos);
    }
    EXPECT_EQ(receipts[4][0].as<std::string>(), "scheduled");
    const auto released = client.receive(10s);
    ASSERT_TRUE(released) << processes_.back()->log_tail();
    EXPECT_EQ(string_header(released->message, "x-hourglass-id"), "after-poison");
}

// Hostile rows from a seeded generator (values of every JSON type at any depth, names and
// strings up to 400 bytes, most keys ones hourglass reads), the SQL door's soak as
// HostileSoak is the AMQP door's: each row gets one receipt, none takes the intake down, and
// canaries inserted between them are released once, on time.
class HostileRows {
public:
    explicit HostileRows(unsigned seed) : random_(seed) {}

    nlohmann::json value(int depth) {
        switch (pick(depth > 5 ? 6 : 8)) {
            case 0: return nullptr;
            case 1: return pick(2) == 1;
            case 2: return static_cast<std::int64_t>(random_()) - (1LL << 31);
            case 3: return std::uniform_int_distribution<std::int64_t>(-5, 100000)(random_);
            case 4: return std::uniform_real_distribution<double>(-1e6, 1e6)(random_);
            case 5: case 6: return text();
            case 7: {
                auto array = nlohmann::json::array();
                for (int i = pick(4); i > 0; --i) array.push_back(value(depth + 1));
                return array;
            }
            default: return object(depth + 1, {});
        }
    }
    nlohmann::json object(int depth, const std::vector<std::string>& names) {
        auto result = nlohmann::json::object();
        for (int i = pick(5); i > 0; --i) {
            const auto name = !names.empty() && pick(4) > 0 ? names[pick(names.size())] : text();
            result[name] = value(depth);
        }
        return result;
    }
    // Printable and control characters, quotes, backslashes and a two-byte letter: valid
    // UTF-8 always, as jsonb and text columns hold.
    std::string text() {
        static const std::vector<std::string> kPieces = {"a", "b", "\"", "\\", "'", "\n",
                                                         "\x01", "\xc3\xa9", " ", "%", "_",
                                                         "{", "}", ":", ",", "-", "0", "9"};
        std::string out;
        for (auto n = pick(3) == 0 ? pick(400) : pick(12); n > 0; --n) out += kPieces[pick(kPieces.size())];
        return out;
    }

private:
    std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(random_); }
    std::mt19937 random_;
};

TEST_F(SqlIntake, a_soak_of_hostile_rows_ends_each_alone_and_canaries_are_released_on_time) {
    auto& process = start_hourglass({"--max-body", "2000", "--horizon", "5s"});
    wait_until_ready(process);
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "canary.#");
    HostileRows rows(20261206);
    const std::vector<std::string> properties = {"message_id", "user_id", "content_type",
                                                 "priority", "timestamp", "expiration"};
    const std::vector<std::string> headers = {"x-delay", "x-schedule-at", "x-cron", "x-cancel",
                                              "x-replace", "x-pause", "x-cancel-prefix",
                                              "x-hourglass-exchange", "x-cron-tz"};
    constexpr int kRounds = 40, kHostilePerRound = 50;
    for (int round = 0; round < kRounds; ++round) {
        pqxx::work tx(*db_);
        tx.exec("SET LOCAL search_path TO " + tx.quote_name(schema_));
        for (int i = 0; i < kHostilePerRound; ++i) {
            tx.exec_params("INSERT INTO commands (routing_key, properties, headers) "
                           "VALUES ($1, $2::jsonb, $3::jsonb)",
                           rows.text(), rows.object(0, properties).dump(),
                           rows.object(0, headers).dump());
        }
        tx.exec_params("INSERT INTO commands (routing_key, properties, headers) VALUES "
                       "('canary.k', $1::jsonb, '{\"x-delay\": 2000}')",
                       nlohmann::json{{"message_id", "canary-" + std::to_string(round)}}.dump());
        tx.commit();
        std::this_thread::sleep_for(100ms);  // a steady stream, as applications insert
    }
    const auto total = std::to_string(kRounds * (kHostilePerRound + 1));
    ASSERT_TRUE(eventually("SELECT count(*) FROM command_receipts", total, 60s)) << process.log_tail();
    EXPECT_EQ(count("SELECT count(*) FROM commands"), 0);
    // The generator reaches past the first checks: some hostile rows are accepted (and
    // released under routing keys no one binds), most are rejected with a reason.
    EXPECT_GT(count("SELECT count(*) FROM command_receipts WHERE status <> 'rejected' "
                    "AND job_id NOT LIKE 'canary-%'"), 0);
    EXPECT_GT(count("SELECT count(*) FROM command_receipts WHERE status = 'rejected'"), 1000);
    // On time as the audit saw them leave (this client reads them only now), and once.
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs WHERE id LIKE 'canary-%' AND state = 'done'",
                           std::to_string(kRounds), 20s));
    const auto lateness = sql("SELECT min(lateness_ms), max(lateness_ms) FROM jobs WHERE id LIKE 'canary-%'");
    EXPECT_GE(lateness[0][0].as<double>(), 0.0);
    EXPECT_LE(lateness[0][1].as<double>(), 1000.0) << "a canary released late";
    std::map<std::string, int> copies;
    for (const auto& r : client.drain(3000ms, 30s)) ++copies[string_header(r.message, "x-hourglass-id")];
    EXPECT_EQ(copies.size(), static_cast<std::size_t>(kRounds));
    for (const auto& [id, n] : copies) EXPECT_EQ(n, 1) << id;
    EXPECT_TRUE(wait_for([&] { return http_get(process.http_port(), "/readyz").status == 200; }, 5s));
}

// A take reads a bounded number of bytes (SqlCommandLimits::batch_bytes): 500 commands of a
// 1 MiB body each were read in one batch, about 3 GiB in memory with their copies. Here bodies
// of 3 MiB and a budget of 8 MiB: three commands a take (the third starts below the budget).
TEST_F(SqlIntake, a_take_reads_a_bounded_number_of_bytes) {
    store::migrate(*db_, schema_, false);
    sql("INSERT INTO commands (routing_key, body) SELECT 'big.' || i, "
        "convert_to(repeat('x', 3 * 1024 * 1024), 'UTF8') FROM generate_series(1, 10) i");
    store::JobStore store({pg_url_, schema_});
    const store::SqlCommandLimits limits{.commands = 500,
                                         .body_bytes = 4 * 1024 * 1024,
                                         .json_bytes = 256 * 1024,
                                         .batch_bytes = 8 * 1024 * 1024};
    const auto parse = [](const store::SqlCommandRow& row) {
        Command command;
        command.action = Rejection{"measured " + std::to_string(row.body ? row.body->size() : 0)};
        return command;
    };
    auto batch = store.take_sql_commands(limits, parse);
    EXPECT_EQ(batch.commands.size(), 3u);
    EXPECT_TRUE(batch.more) << "seven wait for the next take";
    std::size_t taken = batch.commands.size();
    while (batch.more) {
        batch = store.take_sql_commands(limits, parse);
        EXPECT_LE(batch.commands.size(), 3u);
        taken += batch.commands.size();
    }
    EXPECT_EQ(taken, 10u);
    EXPECT_EQ(count("SELECT count(*) FROM commands"), 0);
}

// Each take commits the jobs, the receipts and the deletion together: killed while taking
// 20,000 commands without ids (each would get a new generated id if taken twice), hourglass
// leaves exactly one job and one receipt per command once restarted.
TEST_F(SqlIntake, a_kill_mid_intake_loses_and_duplicates_nothing) {
    EXPECT_EQ(start_hourglass().terminate(), 0);  // the schema, migrated; nothing to take yet
    transaction({"INSERT INTO commands (routing_key, headers) SELECT 'bulk.' || i, "
                 "'{\"x-delay\": 3600000}' FROM generate_series(1, 20000) AS i"},
                /*commit=*/true);
    auto& first = start_hourglass();
    ASSERT_TRUE(wait_for([&] { return count("SELECT count(*) FROM command_receipts") > 0; }, 20s));
    first.kill_hard();
    const auto taken_before_kill = count("SELECT count(*) FROM command_receipts");
    EXPECT_LT(taken_before_kill, 20000) << "killed after the intake was over: no test";
    EXPECT_EQ(count("SELECT count(*) FROM jobs"), taken_before_kill);

    start_hourglass();
    ASSERT_TRUE(eventually("SELECT count(*) FROM commands", "0", 60s));
    EXPECT_EQ(count("SELECT count(*) FROM jobs"), 20000);
    EXPECT_EQ(count("SELECT count(*) FROM command_receipts"), 20000);
    EXPECT_EQ(count("SELECT count(DISTINCT job_id) FROM command_receipts"), 20000);
    EXPECT_EQ(count("SELECT count(DISTINCT routing_key) FROM jobs"), 20000)
        << "each command became exactly one job";
}

// A transaction left open holding the intake's leader lock (an operator's session of hourglass's
// role, a stuck client) stops the SQL intake of every instance without an error. hourglass names
// it: `status` at once, the log once the same transaction has held it 30 s; when it ends, the
// commands waiting are taken and the log says so.
TEST_F(SqlIntake, a_transaction_holding_the_intake_lock_is_named_in_the_log_and_in_status) {
    auto& process = start_hourglass();
    wait_until_ready(process);
    pqxx::connection holder(pg_url_);
    pqxx::work hold(holder);
    const auto pid = std::to_string(hold.exec1("SELECT pg_backend_pid()")[0].as<int>());
    hold.exec("SELECT 1 FROM " + hold.quote_name(schema_) +
              ".leader_locks WHERE name = 'sql_intake' FOR UPDATE");
    transaction({"INSERT INTO commands (routing_key, properties, headers) VALUES "
                 "('held.k', '{\"message_id\": \"held-1\"}', '{\"x-delay\": 600000}')"},
                /*commit=*/true);
    std::this_thread::sleep_for(6s);  // status names holders open 5 s and more (PostgreSQL's clock)
    const auto status = run_cli({"status", "--pg-url", pg_url_, "--schema", schema_});
    EXPECT_THAT(status.out, ::testing::ContainsRegex("leader locks held +sql_intake held by pid " +
                                                     pid + " \\(role [^,]+, idle in transaction"));
    const auto logged = [&](const std::string& text, std::chrono::milliseconds timeout) {
        return wait_for(
            [&] { return read_all(process.log_path()).find(text) != std::string::npos; }, timeout);
    };
    EXPECT_TRUE(logged("SQL intake: no command is taken from " + schema_ +
                           ".commands while another transaction holds the leader lock 'sql_intake'",
                       35s))
        << process.log_tail();
    EXPECT_TRUE(logged("pg_terminate_backend(" + pid + ")", 0s));
    EXPECT_EQ(count("SELECT count(*) FROM command_receipts"), 0) << "taken under the lock";

    hold.commit();
    EXPECT_TRUE(eventually("SELECT status FROM command_receipts", "scheduled")) << process.log_tail();
    EXPECT_TRUE(logged("SQL intake: the leader lock 'sql_intake' is free again", 5s));
    EXPECT_THAT(run_cli({"status", "--pg-url", pg_url_, "--schema", schema_}).out,
                ::testing::ContainsRegex("leader locks held +none"));
}

}  // namespace
}  // namespace hourglass::testing
