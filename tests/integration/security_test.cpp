// TLS (amqps:// with peer and host name verification, PostgreSQL sslmode=verify-full) and least
// privilege (hourglass runs with exactly the RabbitMQ permissions and PostgreSQL grants that
// docs/operating.md "Permissions" documents). scripts/services provides a test CA, TLS listeners and an
// administrator for making users (HOURGLASS_AMQPS_URL, HOURGLASS_PG_TLS_URL, ...ADMIN_URL).
#include <gmock/gmock.h>

#include <array>
#include <cstdlib>
#include <map>
#include <fstream>
#include <sstream>
#include <thread>

#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// The lines of stderr that are not log lines: the start-up error.
std::vector<std::string> error_lines(const std::string& err) {
    std::vector<std::string> errors;
    for (const auto& line : lines_of(err)) {
        if (!line.starts_with("[")) errors.push_back(line);
    }
    return errors;
}

// A regular expression matching `text` literally.
std::string regex_quote(const std::string& text) {
    std::string out;
    for (const char c : text) {
        if (std::string_view(".^$|()[]{}*+?\\").find(c) != std::string_view::npos) out += '\\';
        out += c;
    }
    return out;
}

class Security : public HourglassTest {
protected:
    void SetUp() override {
        HourglassTest::SetUp();
        if (IsSkipped()) return;
        amqps_url_ = env_or_skip("HOURGLASS_AMQPS_URL");
        pg_tls_url_ = env_or_skip("HOURGLASS_PG_TLS_URL");
        ca_file_ = env_or_skip("HOURGLASS_TLS_CA_FILE");
        if (amqps_url_.empty() || pg_tls_url_.empty() || ca_file_.empty()) {
            GTEST_SKIP() << "no TLS listeners: scripts/services from before TLS";
        }
    }

    // A CA that signed nothing of ours, made with the openssl CLI.
    std::string wrong_ca() {
        const auto path = "/tmp/hourglass-wrong-ca-" + prefix_ + ".pem";
        const auto command =
            "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
            "-keyout /dev/null -subj '/CN=not the hourglass test CA' -days 1 -out '" +
            path + "' >/dev/null 2>&1";
        EXPECT_EQ(std::system(command.c_str()), 0) << command;
        return path;
    }

    std::string amqps_url_, pg_tls_url_, ca_file_;
};

TEST_F(Security, runs_over_amqps_and_verify_full_and_releases_a_job) {
    const auto plain_amqp = amqp_url_;
    // hourglass itself talks TLS to both servers, verifying their certificates (and with a
    // client certificate, which RabbitMQ verifies when one is sent).
    amqp_url_ = amqps_url_;
    pg_url_ = pg_tls_url_;
    std::vector<std::string> tls = {"--amqp-ca-cert", ca_file_};
    const auto client_cert = env_or_skip("HOURGLASS_TLS_CLIENT_CERT");
    const auto client_key = env_or_skip("HOURGLASS_TLS_CLIENT_KEY");
    if (!client_cert.empty()) tls.insert(tls.end(), {"--amqp-cert", client_cert, "--amqp-key", client_key});
    auto& process = start_hourglass(tls);
    ASSERT_TRUE(process.running());
    EXPECT_THAT(process.log_tail(200), HasSubstr("amqp amqps://"));

    Client client(plain_amqp);  // an application, over plain AMQP
    client.subscribe(out_exchange(), "#");
    client.publish(delayed("tls-1", 300));
    const auto released = client.receive(15s);
    ASSERT_TRUE(released) << process.log_tail();
    EXPECT_EQ(string_header(released->message, "x-hourglass-id"), "tls-1");
    EXPECT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'tls-1'", "done"));

    // The same job store, read over verify-full: the connection is encrypted.
    pqxx::connection tls_db(pg_tls_url_);
    pqxx::work tx(tls_db);
    EXPECT_TRUE(tx.exec1("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")[0].as<bool>());
}

TEST_F(Security, a_wrong_ca_or_incomplete_tls_settings_are_one_clear_startup_error) {
    const auto wrong = wrong_ca();
    std::string wrong_pg = pg_tls_url_.substr(0, pg_tls_url_.find("sslrootcert=")) + "sslrootcert=" + wrong;
    struct Case {
        std::string what;
        std::vector<std::string> arguments;
        std::string expected;
    };
    const std::vector<Case> cases = {
        {"broker certificate not signed by the given CA",
         {"--amqp-url", amqps_url_, "--amqp-ca-cert", wrong, "--pg-url", pg_url_},
         "cannot connect to RabbitMQ at localhost:"},
        {"database certificate not signed by the given CA",
         {"--amqp-url", amqps_url_, "--amqp-ca-cert", ca_file_, "--pg-url", wrong_pg},
         "certificate verify failed"},
        {"a CA file with a plain amqp:// URL",
         {"--amqp-url", amqp_url_, "--amqp-ca-cert", ca_file_, "--pg-url", pg_url_},
         "is amqp://, not amqps://"},
        {"a client certificate without its key",
         {"--amqp-url", amqps_url_, "--amqp-ca-cert", ca_file_, "--amqp-cert", ca_file_,
          "--pg-url", pg_url_},
         "needs both --amqp-cert and --amqp-key"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.what);
        auto arguments = c.arguments;
        arguments.insert(arguments.begin(), "run");
        arguments.insert(arguments.end(), {"--schema", schema_, "--prefix", prefix_, "--http", "off"});
        const auto result = run_cli(arguments, 20s);
        EXPECT_NE(result.exit_code, 0);
        EXPECT_NE(result.exit_code, -1) << "it hung";
        const auto errors = error_lines(result.err);
        ASSERT_EQ(errors.size(), 1u) << result.err;
        EXPECT_THAT(errors[0], ::testing::StartsWith("hourglass: "));
        EXPECT_THAT(errors[0], HasSubstr(c.expected));
        EXPECT_THAT(result.err, ::testing::Not(HasSubstr("hourglass-app-secret")));
    }
    std::remove(wrong.c_str());

    // A CA file that does not exist is a usage error (64), named by the command line parser.
    const auto missing = run_cli({"run", "--amqp-url", amqps_url_, "--amqp-ca-cert",
                                  "/nonexistent/ca.pem", "--http", "off"});
    EXPECT_EQ(missing.exit_code, 64);
    EXPECT_THAT(missing.err, HasSubstr("/nonexistent/ca.pem"));
}

class Permissions : public HourglassTest {
protected:
    void TearDown() override {
        HourglassTest::TearDown();
        for (const auto& user : rabbit_users_) services("rabbitmqctl", "delete_user '" + user + "'");
        if (!pg_roles_.empty()) {
            pqxx::connection admin(admin_pg_url_);
            for (const auto& role : pg_roles_) {
                pqxx::work tx(admin);
                tx.exec("DROP OWNED BY " + tx.quote_name(role) + " CASCADE");
                tx.exec("DROP ROLE " + tx.quote_name(role));
                tx.commit();
            }
        }
    }

    // A RabbitMQ user with exactly these permissions on vhost "/"; returns its URL.
    std::string rabbit_user(const std::string& name, const std::string& configure,
                            const std::string& write, const std::string& read) {
        if (admin_amqp_url_ == amqp_url_) {
            ADD_FAILURE() << "no HOURGLASS_AMQP_ADMIN_URL";
            return {};
        }
        services("rabbitmqctl", "add_user '" + name + "' secret-" + name);
        rabbit_users_.push_back(name);
        services("rabbitmqctl", "set_permissions -p / '" + name + "' '" + configure + "' '" +
                                    write + "' '" + read + "'");
        return with_user(amqp_url_, name, "secret-" + name);
    }

    // A PostgreSQL role that can log in and connect to the database, nothing else; returns its
    // URL.
    std::string pg_role(const std::string& name) {
        pqxx::connection admin(admin_pg_url_);
        pqxx::work tx(admin);
        tx.exec("CREATE ROLE " + tx.quote_name(name) + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD " +
                tx.quote("secret-" + name));
        pg_roles_.push_back(name);
        tx.exec("GRANT CONNECT ON DATABASE " + tx.quote_name(admin.dbname()) + " TO " +
                tx.quote_name(name));
        // So the administrator may create a schema owned by it (and drop it afterwards).
        tx.exec("GRANT " + tx.quote_name(name) + " TO CURRENT_USER");
        tx.commit();
        return with_user(pg_url_, name, "secret-" + name);
    }

    // Roles `_orders` and `_billing` with the documented intake grants, `_wide` with INSERT
    // and SELECT on the whole of hourglass.commands; each connected, by its suffix.
    std::map<std::string, std::unique_ptr<pqxx::connection>>& application_roles() {
        const auto schema = db_->quote_name(schema_);
        for (const auto* name : {"_orders", "_billing", "_wide"}) {
            const auto role = schema_ + name;
            roles_[name] = std::make_unique<pqxx::connection>(pg_role(role));
            sql("GRANT USAGE ON SCHEMA " + schema + " TO " + db_->quote_name(role));
            sql("GRANT SELECT ON " + schema + ".command_receipts TO " + db_->quote_name(role));
            sql(std::string(name) == "_wide"
                    ? "GRANT INSERT, SELECT ON " + schema + ".commands TO " + db_->quote_name(role)
                    : "GRANT INSERT (routing_key, body, properties, headers), SELECT (id) ON " +
                          schema + ".commands TO " + db_->quote_name(role));
        }
        return roles_;
    }

    // Inserts one command as an application role; returns its receipt's status, due time and
    // error (empty, with a failure, if none came within 10 s).
    std::array<std::string, 3> command_as(const std::string& role, const std::string& routing_key,
                                          const std::string& properties, const std::string& headers) {
        const auto schema = db_->quote_name(schema_);
        pqxx::work tx(*roles_.at(role));
        const auto id = tx.exec_params1("INSERT INTO " + schema + ".commands (routing_key, "
                                        "properties, headers) VALUES ($1, $2, $3) RETURNING id",
                                        routing_key, properties, headers)[0].as<std::int64_t>();
        tx.commit();
        std::array<std::string, 3> receipt;
        EXPECT_TRUE(wait_for(
            [&] {
                pqxx::work read(*roles_.at(role));
                const auto rows = read.exec_params(
                    "SELECT status, coalesce(due_at::text, ''), coalesce(error, '') FROM " +
                        schema + ".command_receipts WHERE command_id = $1", id);
                if (rows.empty()) return false;
                for (int i = 0; i < 3; ++i) receipt[i] = rows[0][i].as<std::string>();
                return true;
            },
            std::chrono::seconds{10})) << "no receipt for command " << id << " of " << role;
        return receipt;
    }

    std::vector<std::string> rabbit_users_, pg_roles_;
    std::map<std::string, std::unique_ptr<pqxx::connection>> roles_;
};

// docs/operating.md "Permissions", for this test's prefix P: configure ^P\..*, write ^(P\..*|amq\.default)$,
// read ^P\..*; and in PostgreSQL a role that owns the schema (made by a DBA) and may connect.
TEST_F(Permissions, hourglass_runs_with_exactly_the_documented_permissions) {
    const auto p = regex_quote(prefix_);
    const auto amqp = rabbit_user("hg-exact-" + schema_, "^" + p + "\\..*$",
                                  "^(" + p + "\\..*|amq\\.default)$", "^" + p + "\\..*$");
    const auto role = schema_ + "_owner";
    const auto pg = pg_role(role);
    {
        pqxx::connection admin(admin_pg_url_);
        pqxx::work tx(admin);
        tx.exec("CREATE SCHEMA " + tx.quote_name(schema_) + " AUTHORIZATION " + tx.quote_name(role));
        tx.commit();
    }
    amqp_url_ = amqp;
    pg_url_ = pg;
    auto& process = start_hourglass();
    ASSERT_TRUE(process.running());

    // An application (the suite's own user) schedules a job with a receipt, and a bad command.
    Client client(env_or_skip("HOURGLASS_AMQP_URL"));
    client.subscribe(out_exchange(), "#");
    const auto receipts = client.receipt_queue();
    auto job = delayed("least-1", 300);
    set_header(job.properties, "x-reply-to", receipts);
    job.properties.correlation_id = "c-1";
    auto bad = delayed("least-bad", -1);
    client.publish_all({job, bad});

    std::vector<Received> got;
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (got.size() < 2 && std::chrono::steady_clock::now() < deadline) {
        if (auto message = client.receive(1s)) got.push_back(std::move(*message));
    }
    ASSERT_EQ(got.size(), 2u) << process.log_tail();
    int receipts_seen = 0, releases_seen = 0;
    for (const auto& message : got) {
        if (message.message.exchange.empty()) {
            ++receipts_seen;
            EXPECT_EQ(parse_receipt(message).status, "scheduled");
        } else {
            ++releases_seen;
            EXPECT_EQ(string_header(message.message, "x-hourglass-id"), "least-1");
        }
    }
    EXPECT_EQ(receipts_seen, 1);
    EXPECT_EQ(releases_seen, 1);
    // The rejection reached <prefix>.rejected; the audit recorded the release.
    bool rejected = false;
    for (int i = 0; i < 100 && !rejected; ++i) {
        rejected = client.queue_size(prefix_ + ".rejected").value_or(0) == 1;
        if (!rejected) std::this_thread::sleep_for(100ms);
    }
    EXPECT_TRUE(rejected);
    pqxx::connection owner(pg);
    bool done = false;
    for (int i = 0; i < 100 && !done; ++i) {
        pqxx::work tx(owner);
        done = tx.exec1("SELECT state FROM " + tx.quote_name(schema_) + ".jobs WHERE id = 'least-1'")[0]
                   .as<std::string>() == "done";
        tx.commit();
        if (!done) std::this_thread::sleep_for(100ms);
    }
    EXPECT_TRUE(done);
    EXPECT_EQ(process.terminate(), 0);
    // Leave nothing behind (TearDown's schema drop runs as another role).
    pqxx::connection admin(admin_pg_url_);
    pqxx::work tx(admin);
    tx.exec("DROP SCHEMA " + tx.quote_name(schema_) + " CASCADE");
    tx.commit();
}

// docs/operating.md "An application that schedules from SQL": with exactly the documented
// grants, an application's role schedules in its own transaction and reads its receipt, and
// reads or changes nothing else.
TEST_F(Permissions, an_application_role_with_the_documented_grants_schedules_from_sql_and_reads_nothing_else) {
    start_hourglass();
    const auto app = schema_ + "_app";
    const auto url = pg_role(app);
    const auto schema = db_->quote_name(schema_);
    const auto role = db_->quote_name(app);
    sql("GRANT USAGE ON SCHEMA " + schema + " TO " + role);
    sql("GRANT INSERT (routing_key, body, properties, headers), SELECT (id) ON " + schema +
            ".commands TO " + role);
    sql("GRANT SELECT ON " + schema + ".command_receipts TO " + role);

    pqxx::connection connection(url);
    std::int64_t command_id = 0;
    {
        pqxx::work tx(connection);
        command_id = tx.exec1("INSERT INTO " + schema + ".commands (routing_key, properties, headers) "
                              "VALUES ('app.remind', '{\"message_id\": \"app-1\"}', "
                              "'{\"x-delay\": 600000}') RETURNING id")[0]
                         .as<std::int64_t>();
        tx.commit();
    }
    std::string status;
    ASSERT_TRUE(wait_for(
        [&] {
            pqxx::work tx(connection);
            const auto rows = tx.exec_params("SELECT status FROM " + schema +
                                                 ".command_receipts WHERE command_id = $1",
                                             command_id);
            if (!rows.empty()) status = rows[0][0].as<std::string>();
            return !rows.empty();
        },
        std::chrono::seconds{10}));
    EXPECT_EQ(status, "scheduled");
    EXPECT_EQ(job_state("app-1"), "pending");

    for (const auto& forbidden :
         {"SELECT count(*) FROM " + schema + ".jobs", "SELECT body FROM " + schema + ".commands",
          "DELETE FROM " + schema + ".commands", "UPDATE " + schema + ".command_receipts SET status = 'x'",
          "DELETE FROM " + schema + ".command_receipts",
          // A command id of its choosing: a receipt planted for another application's command.
          "INSERT INTO " + schema + ".commands (id, routing_key) OVERRIDING SYSTEM VALUE "
          "VALUES (999999, 'app.planted')"}) {
        pqxx::work tx(connection);
        try {
            tx.exec(forbidden);
            ADD_FAILURE() << "the application's role may: " << forbidden;
        } catch (const pqxx::insufficient_privilege&) {
        }
    }
}

// docs/operating.md "Owners", under each role: with --command-scope owner, an application's
// role schedules, cancels and cancels by prefix only its own jobs, reads only its own
// receipts, learns nothing of another's job but that its id is taken, and cannot write a
// command in another role's name; an operator (--operator) acts on every job, from the CLI too.
TEST_F(Permissions, with_the_owner_scope_each_role_acts_only_on_its_own_jobs) {
    const auto amqp_user = amqp_url_.substr(7, amqp_url_.find(':', 7) - 7);
    start_hourglass({"--command-scope", "owner", "--operator", amqp_user});
    const auto schema = db_->quote_name(schema_);
    auto& roles = application_roles();
    const std::string later = R"({"x-delay": 600000})";
    EXPECT_EQ(command_as("_orders", "shared.orders", R"({"message_id": "o-1"})", later)[0], "scheduled");
    EXPECT_EQ(command_as("_billing", "shared.billing", R"({"message_id": "b-1"})", later)[0], "scheduled");
    EXPECT_EQ(sql("SELECT owner FROM jobs WHERE id = 'o-1'")[0][0].as<std::string>(), schema_ + "_orders");

    const auto cancel_other = command_as("_billing", "", R"({"message_id": "o-1"})", R"({"x-cancel": true})");
    EXPECT_EQ(cancel_other[0], "rejected");
    EXPECT_THAT(cancel_other[2], HasSubstr("belongs to another owner"));
    const auto taken = command_as("_billing", "x", R"({"message_id": "o-1"})", later);
    EXPECT_EQ(taken[0], "rejected") << "a schedule under another owner's id";
    EXPECT_EQ(taken[1], "") << "and no word of that job's due time";
    const auto replace = command_as("_billing", "x", R"({"message_id": "o-1"})",
                                    R"({"x-delay": 1000, "x-replace": true})");
    EXPECT_EQ(replace[0], "rejected");
    EXPECT_EQ(command_as("_billing", "", "{}", R"({"x-cancel-prefix": "shared."})")[0], "cancelled");
    EXPECT_EQ(job_state("o-1"), "pending") << "a prefix cancels only the owner's jobs";
    EXPECT_EQ(job_state("b-1"), "cancelled");

    // Receipts: each role reads its own only.
    for (const auto& [name, connection] : roles) {
        pqxx::work tx(*connection);
        const auto foreign = tx.exec1("SELECT count(*) FROM " + schema + ".command_receipts "
                                      "WHERE owner <> current_user")[0].as<int>();
        EXPECT_EQ(foreign, 0) << name;
    }
    {  // Another role's name: the column is not granted, and the policy refuses it anyway.
        for (const auto* role : {"_billing", "_wide"}) {
            pqxx::work tx(*roles[role]);
            EXPECT_ANY_THROW(tx.exec("INSERT INTO " + schema + ".commands (routing_key, owner, "
                                     "headers) VALUES ('x', " + tx.quote(schema_ + "_orders") +
                                     ", '{\"x-cancel-prefix\": \"shared.\"}')")) << role;
        }
        pqxx::work tx(*roles["_wide"]);
        EXPECT_EQ(tx.exec1("SELECT count(*) FROM " + schema + ".commands")[0].as<int>(), 0)
            << "another role's pending commands are invisible to a role granted SELECT";
    }

    // Over AMQP without user_id: the empty owner, which owns nothing here.
    Client client(amqp_url_);
    client.publish(cancel_command("o-1", client.receipt_queue()));
    const auto receipt = client.receive(std::chrono::seconds{10});
    ASSERT_TRUE(receipt.has_value());
    EXPECT_EQ(parse_receipt(*receipt).status, "rejected");
    // The CLI publishes as its RabbitMQ user, an operator here.
    const auto cli = run_cli({"cancel", "o-1", "--amqp-url", amqp_url_, "--prefix", prefix_});
    EXPECT_EQ(cli.exit_code, 0) << cli.out << cli.err;
    EXPECT_EQ(job_state("o-1"), "cancelled");
}

// A role that may only connect held hourglass's advisory locks (fixed, public keys): the
// migration lock made every start hang without a word, the intake's stopped the SQL intake and
// the pruner's stopped retention. Leadership is now a row lock only hourglass's role can take,
// and the migration lock a table lock of the same kind.
TEST_F(Permissions, no_other_role_can_take_the_locks_hourglass_coordinates_with) {
    {
        auto& first = start_hourglass();  // migrates the schema
        wait_until_ready(first);
        EXPECT_EQ(first.terminate(), 0);
    }
    pqxx::connection outsider(pg_role(schema_ + "_locker"));
    {
        pqxx::nontransaction locks(outsider);  // session locks: held until the connection ends
        for (const auto& key : {std::string("hourglass.migrate"), "hourglass.sql_intake." + schema_,
                                "hourglass.prune." + schema_}) {
            locks.exec("SELECT pg_advisory_lock(hashtext(" + locks.quote(key) + "))");
        }
    }
    for (const auto& statement :
         {"SELECT 1 FROM " + db_->quote_name(schema_) + ".leader_locks FOR UPDATE",
          "LOCK TABLE " + db_->quote_name(schema_) + ".schema_migrations IN SHARE ROW EXCLUSIVE MODE"}) {
        pqxx::work tx(outsider);
        EXPECT_THROW(tx.exec(statement), pqxx::insufficient_privilege) << statement;
    }

    auto& process = start_hourglass({"--retention", "1s"});
    wait_until_ready(process);
    sql("INSERT INTO commands (routing_key, properties, headers) VALUES "
        "('locks.k', '{\"message_id\": \"locks-1\"}', '{\"x-delay\": 600000}')");
    EXPECT_TRUE(eventually("SELECT status FROM command_receipts", "scheduled")) << process.log_tail();
    Client(amqp_url_).publish(cancel_command("locks-1"));
    EXPECT_TRUE(eventually("SELECT count(*) FROM jobs", "0", 20s)) << "retention stopped";
}

// Migration 005: the SECURITY DEFINER functions of the counters have an explicit search_path and
// no EXECUTE for PUBLIC, so a role that may see the schema still cannot run them as their owner.
TEST_F(Permissions, definer_functions_are_pinned_and_not_executable_by_other_roles) {
    start_hourglass();
    const auto outsider = pg_role(schema_ + "_outsider");
    {
        // The schema's owner lets the outsider see the schema, so only EXECUTE is in question.
        sql("GRANT USAGE ON SCHEMA " + db_->quote_name(schema_) + " TO " +
            db_->quote_name(schema_ + "_outsider"));
        pqxx::connection admin(admin_pg_url_);
        pqxx::work tx(admin);
        for (const auto& function : {"count_job_states", "reset_job_counts", "fold_job_counts"}) {
            SCOPED_TRACE(function);
            const auto row = tx.exec_params1(
                "SELECT array_to_string(proconfig, ';'), has_function_privilege($3, p.oid, 'EXECUTE') "
                "FROM pg_proc p WHERE proname = $1 AND pronamespace = $2::regnamespace",
                function, schema_, schema_ + "_outsider");
            EXPECT_EQ(row[0].as<std::string>(), "search_path=pg_catalog, " + schema_ + ", pg_temp");
            EXPECT_FALSE(row[1].as<bool>());
        }
        tx.commit();
    }
    pqxx::connection connection(outsider);
    pqxx::work tx(connection);
    try {
        tx.exec("SELECT " + tx.quote_name(schema_) + ".fold_job_counts()");
        ADD_FAILURE() << "a role without rights ran fold_job_counts()";
    } catch (const pqxx::insufficient_privilege& error) {
        EXPECT_THAT(error.what(), HasSubstr("permission denied for function fold_job_counts"));
    }
}

TEST_F(Permissions, a_missing_permission_is_one_clear_startup_error) {
    const auto p = regex_quote(prefix_);
    // May declare its queues and exchanges but not read (bind, consume) them.
    const auto amqp = rabbit_user("hg-noread-" + schema_, "^" + p + "\\..*$",
                                  "^(" + p + "\\..*|amq\\.default)$", "");
    const auto pg_no_create = pg_role(schema_ + "_nocreate");  // no schema, may not create one
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--amqp-url", amqp, "--pg-url", pg_url_, "--schema", schema_}, "ACCESS_REFUSED"},
        {{"--pg-url", pg_no_create, "--schema", schema_ + "_none"}, "permission denied for database"},
    };
    for (const auto& [arguments, expected] : cases) {
        SCOPED_TRACE(expected);
        auto full = arguments;
        full.insert(full.begin(), "run");
        full.insert(full.end(), {"--prefix", prefix_, "--http", "off"});
        const auto result = run_cli(full, 20s);
        EXPECT_NE(result.exit_code, 0);
        EXPECT_NE(result.exit_code, -1) << "it hung";
        const auto errors = error_lines(result.err);
        ASSERT_EQ(errors.size(), 1u) << result.err;
        EXPECT_THAT(errors[0], ::testing::StartsWith("hourglass: "));
        EXPECT_THAT(errors[0], HasSubstr(expected));
    }
}

// A schema another role made (and owns) is refused, before any migration runs in it: its owner
// could have planted functions or triggers that run as hourglass's role or read job bodies.
TEST_F(Permissions, a_schema_owned_by_another_role_is_refused) {
    const auto squatter = schema_ + "_squatter";
    pg_role(squatter);
    {
        pqxx::connection admin(admin_pg_url_);
        pqxx::work tx(admin);
        const auto target = schema_ + "_taken";
        tx.exec("CREATE SCHEMA " + tx.quote_name(target) + " AUTHORIZATION " + tx.quote_name(squatter));
        // Even one where hourglass's role could create objects.
        tx.exec("GRANT USAGE, CREATE ON SCHEMA " + tx.quote_name(target) + " TO PUBLIC");
        tx.commit();
    }
    for (const std::string command : {"migrate", "run"}) {
        SCOPED_TRACE(command);
        std::vector<std::string> arguments = {command, "--pg-url", pg_url_, "--schema",
                                              schema_ + "_taken"};
        if (command == "run") arguments.insert(arguments.end(), {"--prefix", prefix_, "--http", "off"});
        const auto result = run_cli(arguments, 20s);
        EXPECT_NE(result.exit_code, 0);
        EXPECT_NE(result.exit_code, -1) << "it hung";
        EXPECT_THAT(result.err, HasSubstr("belongs to role " + squatter)) << result.err;
    }
    pqxx::connection admin(admin_pg_url_);
    pqxx::work tx(admin);
    EXPECT_TRUE(tx.exec_params("SELECT 1 FROM pg_tables WHERE schemaname = $1", schema_ + "_taken")
                    .empty())
        << "a migration ran in the other role's schema";
    tx.exec("DROP SCHEMA " + tx.quote_name(schema_ + "_taken") + " CASCADE");
    tx.commit();
}

}  // namespace
}  // namespace hourglass::testing
