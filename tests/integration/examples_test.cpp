// The programs in examples/, run as a user runs them against the real services, so that they
// cannot rot: each publishes with confirms, asks for receipts and consumes the releases with
// dedupe on x-hourglass-id + x-hourglass-run, and exits 0 only when every job arrived once.
#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

class Examples : public HourglassTest {
protected:
    void TearDown() override {
        HourglassTest::TearDown();
        if (app_role_.empty()) return;
        pqxx::connection admin(admin_pg_url_);
        pqxx::work tx(admin);
        tx.exec("DROP SCHEMA IF EXISTS " + tx.quote_name(app_role_) + " CASCADE");
        tx.exec("DROP OWNED BY " + tx.quote_name(app_role_) + " CASCADE");
        tx.exec("DROP ROLE " + tx.quote_name(app_role_));
        tx.commit();
    }
    // An application's role with the grants of docs/operating.md ("An application that
    // schedules from SQL") and a schema of its own for its table; the example's environment.
    std::string sql_environment() {
        const auto name = schema_ + "_orders";
        {
            pqxx::connection admin(admin_pg_url_);
            pqxx::work tx(admin);
            const auto role = tx.quote_name(name);
            tx.exec("CREATE ROLE " + role + " LOGIN PASSWORD " + tx.quote("secret-" + name));
            tx.exec("GRANT CONNECT ON DATABASE " + tx.quote_name(admin.dbname()) + " TO " + role);
            // So the administrator may create a schema owned by it (and drop it afterwards).
            tx.exec("GRANT " + role + " TO CURRENT_USER");
            tx.exec("CREATE SCHEMA " + role + " AUTHORIZATION " + role);  // first on its search_path
            tx.commit();
        }
        app_role_ = name;
        const auto schema = db_->quote_name(schema_);
        const auto role = db_->quote_name(app_role_);
        sql("GRANT USAGE ON SCHEMA " + schema + " TO " + role);
        sql("GRANT INSERT (routing_key, body, properties, headers), SELECT (id) ON " + schema +
            ".commands TO " + role);
        sql("GRANT SELECT ON " + schema + ".command_receipts TO " + role);
        return "HOURGLASS_PG_URL='" + with_user(pg_url_, app_role_, "secret-" + app_role_) +
               "' HOURGLASS_SCHEMA='" + schema_ + "' ";
    }
    void expect_scheduled_with_the_order(const ShellResult& result) {
        EXPECT_EQ(result.exit_code, 0) << result.output;
        EXPECT_NE(result.output.find("receipt: scheduled"), std::string::npos) << result.output;
        EXPECT_NE(result.output.find("nothing for the rolled-back one"), std::string::npos) << result.output;
        EXPECT_EQ(sql("SELECT count(*) FROM jobs WHERE id LIKE 'remind-example-sql-%'")[0][0].as<int>(), 1);
        EXPECT_TRUE(eventually("SELECT state FROM jobs WHERE id LIKE 'remind-example-sql-%'", "done"))
            << "released";
    }
    std::string app_role_;

    // examples/node with its packages installed (npm ci fills one directory of the source
    // tree, which the other column shares).
    std::string node_example_dir() {
        const std::string dir = source_dir() + "/examples/node";
        const MachineLock npm("examples-node");
        if (run_shell("test -d " + dir + "/node_modules/amqplib -a -d " + dir + "/node_modules/pg")
                .exit_code != 0) {
            const auto install = run_shell("cd " + dir + " && timeout 300 npm ci --no-audit --no-fund");
            EXPECT_EQ(install.exit_code, 0) << "npm ci in examples/node failed:\n" << install.output;
        }
        return dir;
    }

    // The example's environment: the least-privilege user and this test's prefix.
    std::string environment() const {
        return "HOURGLASS_AMQP_URL='" + amqp_url_ + "' HOURGLASS_PREFIX='" + prefix_ + "' ";
    }
    void expect_every_job_released_once(const ShellResult& result) {
        EXPECT_EQ(result.exit_code, 0) << result.output;
        EXPECT_NE(result.output.find("published 3 jobs with confirms"), std::string::npos) << result.output;
        EXPECT_NE(result.output.find("3 receipts: scheduled"), std::string::npos) << result.output;
        EXPECT_NE(result.output.find("all released once"), std::string::npos) << result.output;
        EXPECT_EQ(sql("SELECT count(*) FROM jobs WHERE id LIKE 'example-%' AND runs = 1")[0][0].as<int>(), 3);
    }
};

TEST_F(Examples, python_pika_schedules_with_confirms_and_consumes_each_release_once) {
    start_hourglass();
    // Debian's interpreter, where python3-pika is installed (scripts/install-deps).
    const auto result = run_shell(environment() + "timeout 60 /usr/bin/python3 " + source_dir() +
                              "/examples/python/schedule_and_consume.py");
    expect_every_job_released_once(result);
}

TEST_F(Examples, python_psycopg_schedules_in_the_transaction_of_its_own_row) {
    start_hourglass();
    const auto result = run_shell(sql_environment() + "timeout 60 /usr/bin/python3 " + source_dir() +
                                  "/examples/python/schedule_in_transaction.py");
    expect_scheduled_with_the_order(result);
}

TEST_F(Examples, node_amqplib_schedules_with_confirms_and_consumes_each_release_once) {
    const auto dir = node_example_dir();
    if (HasFailure()) return;
    start_hourglass();
    const auto result = run_shell(environment() + "timeout 60 node " + dir + "/schedule_and_consume.js");
    expect_every_job_released_once(result);
}

TEST_F(Examples, node_pg_schedules_in_the_transaction_of_its_own_row) {
    const auto dir = node_example_dir();
    if (HasFailure()) return;
    start_hourglass();
    const auto result =
        run_shell(sql_environment() + "timeout 60 node " + dir + "/schedule_in_transaction.js");
    expect_scheduled_with_the_order(result);
}

}  // namespace
}  // namespace hourglass::testing
