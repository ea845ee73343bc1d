// Operating hourglass (reference §9): /metrics, /healthz and /readyz against a real broker and
// database, the schedule/cancel/status commands, secrets kept out of every output, start-up
// errors as one line, and SIGTERM.
#include <gmock/gmock.h>
#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "common/thread_priority.hpp"
#include "integration/harness.hpp"
#include "store/job_store.hpp"
#include "store/migrations.hpp"
#include "support/prometheus_text.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;
namespace prom = prometheus;

// The password of scheme://user:password@host, as the test environment wrote it.
std::string password_of(const std::string& url) {
    const auto userinfo = url.find("://") + 3;
    const auto at = url.find('@', userinfo);
    const auto colon = url.find(':', userinfo);
    if (at == std::string::npos || colon == std::string::npos || colon > at) return "";
    return url.substr(colon + 1, at - colon - 1);
}

class Operations : public HourglassTest {
protected:
    prom::Exposition scrape(const HourglassProcess& process) {
        const auto answer = http_get(process.http_port(), "/metrics");
        EXPECT_EQ(answer.status, 200);
        EXPECT_EQ(answer.content_type, "text/plain; version=0.0.4; charset=utf-8");
        const auto complaint = prom::promtool_complaint(answer.body);
        EXPECT_FALSE(complaint) << *complaint;
        return prom::parse(answer.body);  // strict: throws on any deviation from the format
    }
    void wait_until_http_ready(const HourglassProcess& process) {
        ASSERT_TRUE(
            wait_for([&] { return http_get(process.http_port(), "/readyz").status == 200; }, 30s))
            << http_get(process.http_port(), "/readyz").body;
    }
    std::vector<std::string> client_flags() const {
        return {"--amqp-url", amqp_url_, "--prefix", prefix_};
    }
    std::vector<std::string> with(std::vector<std::string> arguments,
                                  const std::vector<std::string>& more) const {
        arguments.insert(arguments.end(), more.begin(), more.end());
        return arguments;
    }
};

// Counters and gauges of one scrape, by series.
double series(const prom::Exposition& metrics, const std::string& name,
              const prom::LabelSet& labels = {}) {
    return metrics.value(name, labels);
}

TEST_F(Operations, metrics_are_prometheus_text_and_count_exactly_the_commands_that_flow) {
    auto& process = start_hourglass();
    wait_until_http_ready(process);
    const auto before = scrape(process);

    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    client.publish_all({delayed("far-1", 600000), delayed("far-2", 600000), delayed("soon", 300),
                        delayed("bad", -5)});
    ASSERT_TRUE(client.receive(10s)) << "the short job was not released";

    // The release is recorded by the audit shortly after it arrives.
    ASSERT_TRUE(wait_for(
        [&] { return series(scrape(process), "hourglass_releases_observed_total") >= 1; }, 10s));
    const auto after = scrape(process);
    const auto delta = [&](const std::string& name, const prom::LabelSet& labels = {}) {
        return series(after, name, labels) - series(before, name, labels);
    };
    EXPECT_EQ(delta("hourglass_commands_received_total"), 4);
    EXPECT_EQ(delta("hourglass_commands_total", {{"status", "scheduled"}}), 3);
    EXPECT_EQ(delta("hourglass_commands_total", {{"status", "rejected"}}), 1);
    for (const auto* status : {"duplicate", "replaced", "cancelled", "too_late", "not_found"}) {
        EXPECT_EQ(delta("hourglass_commands_total", {{"status", status}}), 0) << status;
    }
    EXPECT_EQ(delta("hourglass_commands_rejected_total", {{"reason", "x-delay"}}), 1);
    EXPECT_EQ(delta("hourglass_runs_enqueued_total"), 1);
    EXPECT_EQ(delta("hourglass_releases_observed_total"), 1);
    EXPECT_EQ(delta("hourglass_release_lateness_seconds_count"), 1);
    EXPECT_EQ(delta("hourglass_handover_lateness_seconds_count"), 1);
    EXPECT_EQ(delta("hourglass_handover_confirm_seconds_count"), 1);
    EXPECT_EQ(series(after, "hourglass_unconfirmed_publishes"), 0);
    EXPECT_EQ(series(after, "hourglass_connected", {{"component", "ingest"}, {"peer", "rabbitmq"}}),
              1);

    // Gauges from the stats view follow within its refresh interval.
    EXPECT_TRUE(wait_for(
        [&] {
            const auto now = scrape(process);
            return series(now, "hourglass_jobs", {{"state", "pending"}}) == 2 &&
                   series(now, "hourglass_jobs", {{"state", "done"}}) == 1;
        },
        15s));
    EXPECT_EQ(http_get(process.http_port(), "/healthz").status, 200);
}

TEST_F(Operations, readyz_turns_unready_while_the_broker_is_stopped_and_ready_when_it_returns) {
    if (env_or_skip("HOURGLASS_SERVICES_DIR").empty()) GTEST_SKIP() << "needs scripts/test";
    auto& process = start_hourglass();
    wait_until_http_ready(process);
    EXPECT_EQ(http_get(process.http_port(), "/readyz").body, "ready\n");

    // Whatever happens below, the next test gets a running broker.
    struct RestartBroker {
        bool stopped = false;
        ~RestartBroker() {
            if (!stopped) return;
            const auto command = services_script() + " start-rabbit '" +
                                 env_or_skip("HOURGLASS_SERVICES_DIR") + "' >/dev/null 2>&1";
            if (std::system(command.c_str()) != 0) ADD_FAILURE() << "could not restart RabbitMQ";
        }
    } restart;
    services("stop-rabbit");
    restart.stopped = true;

    ASSERT_TRUE(
        wait_for([&] { return http_get(process.http_port(), "/readyz").status == 503; }, 20s));
    const auto unready = http_get(process.http_port(), "/readyz");
    EXPECT_THAT(unready.body, HasSubstr("rabbitmq"));
    EXPECT_EQ(http_get(process.http_port(), "/healthz").status, 200) << "alive while unready";
    EXPECT_EQ(series(scrape(process), "hourglass_connected",
                     {{"component", "ingest"}, {"peer", "rabbitmq"}}),
              0);

    services("start-rabbit");
    restart.stopped = false;
    EXPECT_TRUE(
        wait_for([&] { return http_get(process.http_port(), "/readyz").status == 200; }, 60s))
        << http_get(process.http_port(), "/readyz").body;
    // Reconnected for real: a job still flows.
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    client.publish(delayed("after-restart", 100));
    EXPECT_TRUE(client.receive(15s));
    // Each lost connection is reported, once per component and not once per retry.
    const auto log = read_all(process.log_path());
    EXPECT_THAT(log, HasSubstr("[warning] ingest:"));
    EXPECT_THAT(log, Not(HasSubstr(password_of(amqp_url_))));
}

TEST_F(Operations, schedule_and_cancel_round_trip_through_the_broker_with_exit_codes) {
    start_hourglass();
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "orders.#");

    auto result =
        run_cli(with({"schedule"}, with(client_flags(), {"--key", "orders.created", "--delay",
                                                         "600000", "--id", "cli-1", "--body",
                                                         "hello", "--header", "x-tenant=acme"})));
    ASSERT_EQ(result.exit_code, 0) << result.err;
    auto receipt = nlohmann::json::parse(result.out);
    EXPECT_EQ(receipt["status"], "scheduled");
    EXPECT_EQ(receipt["id"], "cli-1");
    EXPECT_TRUE(receipt["due"].is_string());
    EXPECT_EQ(job_state("cli-1"), "pending");
    EXPECT_EQ(sql("SELECT h->1->>'v' FROM jobs, jsonb_array_elements(properties->'headers') h "
                  "WHERE id = 'cli-1' AND h->>0 = 'x-tenant'")[0][0]
                  .as<std::string>(),
              "acme");

    result = run_cli(with({"schedule"}, with(client_flags(), {"--key", "orders.created", "--delay",
                                                              "600000", "--id", "cli-1"})));
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(nlohmann::json::parse(result.out)["status"], "duplicate");

    result = run_cli(with({"cancel", "cli-1"}, client_flags()));
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(nlohmann::json::parse(result.out)["status"], "cancelled");
    EXPECT_EQ(job_state("cli-1"), "cancelled");

    result = run_cli(with({"cancel", "no-such-job"}, client_flags()));
    EXPECT_EQ(result.exit_code, 4) << "not_found";
    EXPECT_EQ(nlohmann::json::parse(result.out)["status"], "not_found");

    // Rejected input: hourglass's own reason, exit code 3, nothing stored.
    result = run_cli(
        with({"schedule"}, with(client_flags(), {"--key", "k", "--delay", "-5", "--id", "neg"})));
    EXPECT_EQ(result.exit_code, 3);
    receipt = nlohmann::json::parse(result.out);
    EXPECT_EQ(receipt["status"], "rejected");
    EXPECT_THAT(receipt["error"].get<std::string>(), HasSubstr("x-delay"));
    EXPECT_EQ(job_state("neg"), "<none>");
    result =
        run_cli(with({"schedule"}, with(client_flags(), {"--key", "k", "--at", "next tuesday"})));
    EXPECT_EQ(result.exit_code, 3);

    // A short job really is released, with its body; a recurring one is accepted and cancelled.
    result = run_cli(with({"schedule"}, with(client_flags(), {"--key", "orders.soon", "--delay",
                                                              "200ms", "--body", "soon"})));
    EXPECT_EQ(result.exit_code, 0) << result.err;
    const auto released = client.receive(10s);
    ASSERT_TRUE(released);
    EXPECT_EQ(released->message.body, "soon");
    result = run_cli(
        with({"schedule"}, with(client_flags(), {"--key", "reports", "--cron", "0 9 * * MON",
                                                 "--tz", "Europe/Berlin", "--id", "weekly"})));
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    EXPECT_EQ(run_cli(with({"cancel", "weekly"}, client_flags())).exit_code, 0);

    // Usage errors, a prefix no hourglass serves, and no answer in time.
    EXPECT_EQ(run_cli(with({"schedule"}, with(client_flags(), {"--key", "k"}))).exit_code, 64);
    EXPECT_EQ(run_cli({"schedule", "--amqp-url", amqp_url_, "--prefix", prefix_ + "-nobody",
                       "--key", "k", "--delay", "1"})
                  .exit_code,
              5);
    client.channel().declare_exchange(prefix_ + "-deaf.in", "topic");
    const auto deaf_queue = client.channel().declare_queue("", {}, /*exclusive=*/true);
    client.channel().bind_queue(deaf_queue, prefix_ + "-deaf.in", "#");
    const auto started = std::chrono::steady_clock::now();
    result = run_cli({"schedule", "--amqp-url", amqp_url_, "--prefix", prefix_ + "-deaf", "--key",
                      "k", "--delay", "1", "--timeout", "1s"});
    EXPECT_EQ(result.exit_code, 5) << result.err;
    EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
    client.channel().delete_exchange(prefix_ + "-deaf.in");
}

TEST_F(Operations, status_prints_the_stats_view_as_a_table) {
    start_hourglass();
    Client client(amqp_url_);
    client.publish_all({delayed("s-1", 600000), delayed("s-2", 600000)});
    eventually("SELECT pending FROM stats", "2");
    // A paused schedule, and SQL commands that no instance takes (its intake is stopped).
    auto yearly = command("s.cron");
    yearly.properties.message_id = "s-cron";
    set_header(yearly.properties, "x-cron", std::string("0 0 1 1 *"));
    client.publish(yearly);
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs WHERE id = 's-cron'", "1"));
    sql("UPDATE jobs SET state = 'paused', paused_at = now() WHERE id = 's-cron'");
    EXPECT_EQ(processes_.back()->terminate(), 0);
    sql("INSERT INTO commands (routing_key, headers) SELECT 's.sql', '{\"x-delay\": 600000}' "
        "FROM generate_series(1, 3)");
    const auto result = run_cli({"status", "--pg-url", pg_url_, "--schema", schema_});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_THAT(result.out, ::testing::ContainsRegex("pending +2"));
    EXPECT_THAT(result.out, ::testing::ContainsRegex("enqueued +0"));
    EXPECT_THAT(result.out, ::testing::ContainsRegex("paused +1"));
    EXPECT_THAT(result.out, ::testing::ContainsRegex("sql commands waiting +3"));
    EXPECT_THAT(result.out, HasSubstr("next due"));
    EXPECT_THAT(result.out, HasSubstr("lateness, last hour"));
    const auto missing = run_cli({"status", "--pg-url", pg_url_, "--schema", "hg_no_such_schema"});
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_THAT(missing.err, HasSubstr("hourglass migrate"));
}

// Each thread of `pid`: its name and its scheduling policy.
struct ThreadInfo {
    std::string name;
    int policy = -1;
};
std::vector<ThreadInfo> threads_of(pid_t pid) {
    std::vector<ThreadInfo> threads;
    for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
        std::ifstream comm(task.path() / "comm");
        std::string name;
        std::getline(comm, name);
        threads.push_back({name, sched_getscheduler(std::stoi(task.path().filename().string()))});
    }
    return threads;
}

// The compose stack as its user runs it: hourglass with the compose file's environment
// (docker-compose config, compose/env.example), scraped as its Prometheus scrapes it, with the
// Host of monitoring/prometheus/prometheus.yml's target. The Host check refused that name
// (421), and monitoring in compose was broken with no test to notice.
TEST_F(Operations, the_compose_stack_s_prometheus_can_scrape_hourglass) {
    const auto root = source_dir();
    const auto config = run_shell(
        "cd '" + root + "' && docker-compose --env-file compose/env.example -f "
        "compose/docker-compose.yml config | python3 -c 'import json, sys, yaml; "
        "c = yaml.safe_load(sys.stdin); print(json.dumps({\"env\": "
        "c[\"services\"][\"hourglass\"][\"environment\"]}))' && python3 -c 'import json, "
        "yaml; c = yaml.safe_load(open(\"monitoring/prometheus/prometheus.yml\")); "
        "print(json.dumps({\"targets\": [t for j in c[\"scrape_configs\"] if "
        "j[\"job_name\"] == \"hourglass\" for s in j[\"static_configs\"] for t in "
        "s[\"targets\"]]}))'");
    ASSERT_EQ(config.exit_code, 0) << config.output;
    const auto lines = lines_of(config.output);
    ASSERT_EQ(lines.size(), 2u) << config.output;
    const auto environment = nlohmann::json::parse(lines[0])["env"];
    const auto targets = nlohmann::json::parse(lines[1])["targets"];
    ASSERT_FALSE(targets.empty());
    // The compose file's settings, but this test's broker, database, names and port: the
    // container's address (0.0.0.0) is the loopback here.
    std::vector<std::string> names;
    for (const auto& [name, value] : environment.items()) {
        if (name == "HOURGLASS_AMQP_URL" || name == "HOURGLASS_PG_URL" || name == "HOURGLASS_HTTP") continue;
        setenv(name.c_str(), value.get<std::string>().c_str(), 1);
        names.push_back(name);
    }
    auto& process = start_hourglass();
    for (const auto& name : names) unsetenv(name.c_str());
    wait_until_ready(process);
    for (const auto& target : targets) {
        const auto scraped = http_get(process.http_port(), "/metrics", {{"Host", target.get<std::string>()}});
        EXPECT_EQ(scraped.status, 200) << target << ": " << scraped.body;
        EXPECT_NE(scraped.body.find("hourglass_"), std::string::npos);
    }
}

// `top -H`, `perf` and /proc tell the pipeline's threads apart by name.
TEST_F(Operations, names_its_threads_after_the_pipeline_stages) {
    auto& process = start_hourglass();
    std::set<std::string> names;
    ASSERT_TRUE(wait_for(
        [&] {
            names.clear();
            for (const auto& thread : threads_of(process.pid())) names.insert(thread.name);
            return names.count("hg-loader-pub") == 1;
        },
        std::chrono::seconds{10}));
    for (const auto* stage : {"hg-ingest", "hg-loader-claim", "hg-loader-rec", "hg-loader-pub",
                              "hg-heartbeat", "hg-audit", "hg-forward", "hg-signals", "hg-sql-intake"}) {
        EXPECT_EQ(names.count(stage), 1u) << stage;
    }
}

// --realtime-publisher auto: the publisher thread, and it alone, runs SCHED_FIFO whenever the
// process may (these tests' own thread tells whether it may here), and so by default; `off`
// never asks.
TEST_F(Operations, the_publisher_thread_alone_runs_realtime_when_the_process_may) {
    int probe = -1;
    std::jthread([&] { probe = make_this_thread_realtime(kPublisherRealtimePriority); }).join();
    const bool permitted = probe == 0;
    for (const std::string setting : {"auto", "off", "(default)"}) {
        auto& process = start_hourglass(setting == "(default)"
                                            ? std::vector<std::string>{}
                                            : std::vector<std::string>{"--realtime-publisher", setting});
        wait_until_http_ready(process);
        const bool expect_realtime = permitted && setting != "off";
        const int publisher_policy = expect_realtime ? (SCHED_FIFO | SCHED_RESET_ON_FORK) : SCHED_OTHER;
        std::vector<ThreadInfo> threads;
        EXPECT_TRUE(wait_for(
            [&] {
                threads = threads_of(process.pid());
                return std::count_if(threads.begin(), threads.end(), [&](const ThreadInfo& thread) {
                           return thread.name == "hg-loader-pub" && thread.policy == publisher_policy;
                       }) == 1;
            },
            10s))
            << setting << ", permitted " << permitted;
        for (const auto& thread : threads) {
            if (thread.name != "hg-loader-pub") {
                EXPECT_EQ(thread.policy, SCHED_OTHER) << thread.name;
            }
        }
        EXPECT_EQ(series(scrape(process), "hourglass_publisher_realtime"), expect_realtime ? 1 : 0);
        process.terminate();
    }
}

TEST_F(Operations, passwords_never_appear_in_logs_metrics_status_or_errors) {
    const auto amqp_password = password_of(amqp_url_);
    const auto pg_password = password_of(pg_url_);
    if (amqp_password.empty() || pg_password.empty())
        GTEST_SKIP() << "the test URLs have no password";

    auto& text = start_hourglass();
    auto& json = start_hourglass({"--log-format", "json"});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    client.publish_all({delayed("secret-1", 100), delayed("secret-bad", -1)});
    ASSERT_TRUE(client.receive(10s));

    std::vector<std::pair<std::string, std::string>> outputs = {
        {"text log", read_all(text.log_path())},
        {"json log", read_all(json.log_path())},
        {"metrics", http_get(text.http_port(), "/metrics").body},
        {"readyz", http_get(text.http_port(), "/readyz").body},
        {"status", run_cli({"status", "--pg-url", pg_url_, "--schema", schema_}).out},
    };
    // Start-up failures print URLs and library errors: a wrong password, a URL libpq cannot
    // parse (it quotes it back), one with a bad percent escape.
    const std::string wrong = "Wr0ng-Pa55";
    const auto broker = amqp_url_.substr(amqp_url_.find('@'));
    const auto database = pg_url_.substr(pg_url_.find('@'));
    for (const auto& arguments : std::vector<std::vector<std::string>>{
             {"run", "--amqp-url", "amqp://hourglass:" + wrong + broker, "--pg-url", pg_url_},
             {"run", "--pg-url", "postgresql:/hourglass:" + wrong + database},
             {"run", "--pg-url", "postgresql://hourglass:" + wrong + "%zz" + database},
             {"run", "--pg-url", "postgresql://hourglass:" + wrong + database, "--log-format",
              "json"},
             {"status", "--pg-url", "host=127.0.0.1 password=" + wrong + " dbname"}}) {
        auto full = arguments;
        full.insert(full.end(), {"--schema", schema_});
        if (arguments[0] == "run") full.insert(full.end(), {"--prefix", prefix_, "--http", "off"});
        const auto result = run_cli(full);
        EXPECT_NE(result.exit_code, 0);
        outputs.emplace_back("start-up error " + std::to_string(outputs.size()),
                             result.out + result.err);
    }

    EXPECT_THAT(outputs[0].second, HasSubstr(":***@")) << "the start-up line shows masked URLs";
    for (const auto& [what, output] : outputs) {
        SCOPED_TRACE(what);
        EXPECT_FALSE(output.empty());
        EXPECT_THAT(output, Not(HasSubstr(amqp_password)));
        EXPECT_THAT(output, Not(HasSubstr(pg_password)));
        EXPECT_THAT(output, Not(HasSubstr(wrong)));
    }
}

TEST_F(Operations, json_logs_are_one_object_per_line) {
    auto& process = start_hourglass({"--log-format", "json"});
    Client client(amqp_url_);
    client.publish(delayed("json-bad", -1));  // a rejection is logged with its reason
    ASSERT_TRUE(wait_for(
        [&] {
            return series(scrape(process), "hourglass_commands_total", {{"status", "rejected"}}) ==
                   1;
        },
        10s));
    ASSERT_EQ(process.terminate(), 0);
    const auto lines = lines_of(read_all(process.log_path()));
    ASSERT_GT(lines.size(), 5u);
    for (const auto& line : lines) {
        SCOPED_TRACE(line);
        const auto json = nlohmann::json::parse(line, nullptr, false);
        ASSERT_TRUE(json.is_object());
        EXPECT_EQ(json.size(), 3u);
        EXPECT_TRUE(json["time"].is_string());
        EXPECT_TRUE(json["level"].is_string());
        EXPECT_TRUE(json["message"].is_string());
    }
}

// Turning the audit off leaves the audit queue of earlier runs bound: runs handed over with the
// audit still leave their copy there when they are released, and nobody consumes it any more.
// hourglass says so at start. (Its own releases, with --no-audit, leave none.)
TEST_F(Operations, no_audit_warns_when_the_audit_queue_of_an_earlier_run_holds_copies) {
    start_hourglass({"--horizon", "8s"}).terminate();  // declares and binds the audit queue
    auto& before_any_copy = start_hourglass({"--horizon", "8s", "--no-audit"});
    EXPECT_THAT(before_any_copy.log_tail(200), Not(HasSubstr("release copies")))
        << "an empty audit queue is no cause for a warning";
    before_any_copy.terminate();
    // Handed over at once (due within the horizon); 8 s leave time to stop before the release.
    auto& with_audit = start_hourglass({"--horizon", "8s"});
    Client client(amqp_url_);
    client.publish_all({delayed("copied-1", 8000)});
    ASSERT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'copied-1'", "enqueued"))
        << with_audit.log_tail(30);
    with_audit.terminate();  // before the release: its copy then waits in the audit queue
    const auto audit_queue = prefix_ + ".delay.audit";
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (client.queue_size(audit_queue).value_or(0) < 1 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(100ms);
    }
    ASSERT_EQ(client.queue_size(audit_queue).value_or(0), 1u) << "the release was copied";

    auto& without_audit = start_hourglass({"--horizon", "8s", "--no-audit"});
    EXPECT_THAT(without_audit.log_tail(200),
                HasSubstr(audit_queue + " holds 1 release copies and --no-audit is set"));
}

// Runs handed over with the audit off end `enqueued` (nobody observes them). An instance with
// the audit that runs later on the same database must not take them for runs the broker lost:
// re-sending them would deliver every one of them again.
TEST_F(Operations, runs_released_with_the_audit_off_are_not_published_again_by_a_later_audit) {
    auto& without_audit = start_hourglass({"--horizon", "4s", "--no-audit"});
    Client client(amqp_url_);
    const auto queue = prefix_ + ".test-consumer";
    client.channel().declare_queue(queue, {{"x-queue-type", std::string("classic")}});
    client.channel().bind_queue(queue, out_exchange(), "#");
    client.publish_all({delayed("unaudited-1", 500)});
    const auto released = [&](std::uint32_t copies, std::chrono::seconds within) {
        const auto deadline = std::chrono::steady_clock::now() + within;
        while (client.queue_size(queue).value_or(0) < copies &&
               std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(100ms);
        }
        return client.queue_size(queue).value_or(0) >= copies;
    };
    ASSERT_TRUE(released(1, 20s)) << "released once\n" << without_audit.log_tail(30);
    ASSERT_TRUE(eventually("SELECT state || ':' || audited FROM jobs WHERE id = 'unaudited-1'",
                           "enqueued:false"));
    without_audit.terminate();

    start_hourglass({"--horizon", "4s", "--resend-after", "1s"});
    // A lost run would be re-sent about 1 s after the audit connects; give it several times that.
    EXPECT_FALSE(released(2, 8s)) << "published again";
    EXPECT_EQ(job_state("unaudited-1"), "enqueued");
}

// The delay queues are declared without waiting for each reply, over several channels
// (src/delay/topology.cpp): a declaration the broker refuses must still stop the start, with
// the broker's reason and the queue's name, whichever channel it went on.
TEST_F(Operations, a_delay_queue_declared_with_other_arguments_stops_the_start_naming_it) {
    for (const auto& queue : {prefix_ + ".delay.ttl-2000ms.3", prefix_ + ".delay.forward.9000"}) {
        SCOPED_TRACE(queue);
        Client client(admin_amqp_url_);
        client.publish_channel().delete_queue(queue);  // as the run before may have declared it
        client.publish_channel().declare_queue(queue, {{"x-queue-type", std::string("classic")}});
        const auto started = std::chrono::steady_clock::now();
        // --allow-exchange: an instance that accepts targets declares the forward ladder too.
        const auto result = run_cli(
            {"run", "--amqp-url", amqp_url_, "--pg-url", pg_url_, "--schema", schema_, "--prefix",
             prefix_, "--http", "off", "--horizon", "10s", "--allow-exchange", "legacy\\..*"},
            20s);
        EXPECT_NE(result.exit_code, 0);
        EXPECT_NE(result.exit_code, -1) << "it hung";
        EXPECT_LT(std::chrono::steady_clock::now() - started, 15s);
        EXPECT_THAT(result.err, HasSubstr("PRECONDITION_FAILED"));
        EXPECT_THAT(result.err, HasSubstr("'" + queue + "'"));
        client.publish_channel().delete_queue(queue);
    }
}

TEST_F(Operations, sigterm_with_work_in_flight_exits_zero_promptly) {
    auto& process = start_hourglass({"--horizon", "5s"});
    Client client(amqp_url_);
    std::vector<Message> jobs;
    for (int i = 0; i < 200; ++i)
        jobs.push_back(delayed("term-" + std::to_string(i), 100 + i * 20));
    client.publish_all(jobs);
    std::this_thread::sleep_for(500ms);
    const auto started = std::chrono::steady_clock::now();
    EXPECT_EQ(process.terminate(10s), 0);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
    EXPECT_THAT(read_all(process.log_path()), HasSubstr("hourglass stopped"));
    EXPECT_NE(http_get(process.http_port(), "/healthz").status, 200) << "the endpoint is gone";
}

}  // namespace
}  // namespace hourglass::testing
