// The console (reference §9) against the real services: its /api/ answers after jobs, a cron job
// and a bad command were sent; cancel only with the operator token; and the page itself in
// headless Chromium (console_browser.py), which also saves a screenshot.
#include <gmock/gmock.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using ::testing::HasSubstr;

constexpr const char* kToken = "console-test-token-0123456789";
// A job id a browser would run if the page wrote it as HTML.
constexpr const char* kScriptId = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>";

class Console : public HourglassTest {
protected:
    // Schedules what the console should show: two jobs in ten minutes (one with a script in its
    // id), one in two hours, a yearly cron job and a rejected command.
    void schedule_what_the_console_shows() {
        Client client(amqp_url_);
        std::vector<Message> commands = {delayed("console-a", 600000, "console.orders.eu"),
                                         delayed(kScriptId, 600000, "console.orders.us"),
                                         delayed("console-later", 7200000, "console.reports")};
        auto cron = command("console.cron");
        cron.properties.message_id = "console-cron";
        // Yearly: its next run is never within the horizon during the test (never claimed).
        set_header(cron.properties, "x-cron", std::string("0 0 1 1 *"));
        commands.push_back(cron);
        auto bad = command("console.bad.key");
        bad.properties.message_id = "console-bad";
        set_header(bad.properties, "x-delay", std::string("soon"));
        commands.push_back(bad);
        client.publish_all(commands);
        ASSERT_TRUE(eventually("SELECT count(*) FROM jobs", "4"));
        ASSERT_TRUE(eventually("SELECT count(*) FROM rejections", "1"));
    }

    json get_json(int port, const std::string& path) {
        const auto answer = http_get(port, path);
        EXPECT_EQ(answer.status, 200) << path << ": " << answer.body;
        EXPECT_THAT(answer.content_type, HasSubstr("application/json")) << path;
        return json::parse(answer.body, nullptr, false);
    }
};

TEST_F(Console, api_shows_counts_load_rejections_cron_and_jobs_and_cancels_only_with_the_token) {
    auto& process = start_hourglass({"--console-token", kToken});
    schedule_what_the_console_shows();
    const auto port = process.http_port();

    // The counts come from the stats refresher (every 5 s).
    json summary;
    for (auto deadline = std::chrono::steady_clock::now() + 20s;
         std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(500ms)) {
        summary = get_json(port, "/api/summary");
        if (summary["stats"].is_object() && summary["stats"]["pending"] == 4) break;
    }
    ASSERT_EQ(summary["stats"]["pending"], 4) << summary.dump();
    EXPECT_EQ(summary["cancel_enabled"], true);
    EXPECT_EQ(summary["instances"].size(), 1u);
    EXPECT_THAT(summary.dump(), ::testing::Not(HasSubstr(kToken)));

    // Two jobs 10 minutes ahead in the minute chart; the one in two hours in the hour chart.
    const auto upcoming = get_json(port, "/api/upcoming");
    int next_hour = 0;
    for (const auto& slot : upcoming["minutes"]["slots"]) next_hour += slot["jobs"].get<int>();
    EXPECT_EQ(next_hour, 2) << upcoming["minutes"].dump();
    int next_day = 0;
    for (const auto& slot : upcoming["hours"]["slots"]) next_day += slot["jobs"].get<int>();
    EXPECT_EQ(next_day, 3);
    EXPECT_EQ(upcoming["minutes"]["capped"], false);

    const auto rejections = get_json(port, "/api/rejections");
    ASSERT_EQ(rejections.size(), 1u);
    EXPECT_EQ(rejections[0]["id"], "console-bad");
    EXPECT_EQ(rejections[0]["routing_key"], "console.bad.key");
    EXPECT_THAT(rejections[0]["reason"].get<std::string>(), HasSubstr("'soon'"));

    const auto cron = get_json(port, "/api/cron");
    ASSERT_EQ(cron.size(), 1u);
    EXPECT_EQ(cron[0]["id"], "console-cron");
    ASSERT_EQ(cron[0]["next_runs"].size(), 3u);
    EXPECT_EQ(cron[0]["next_runs"][0],
              sql("SELECT to_char(due_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') "
                  "FROM jobs WHERE id = 'console-cron'")[0][0].as<std::string>());

    // Search: by routing-key prefix (byte order, bounded), and by exact id, with the body as text.
    const auto by_prefix = get_json(port, "/api/search?q=console.orders.");
    ASSERT_EQ(by_prefix["by_routing_key_prefix"].size(), 2u);
    EXPECT_EQ(by_prefix["by_routing_key_prefix"][0]["id"], "console-a");
    EXPECT_TRUE(by_prefix["job"].is_null());
    const auto by_id = get_json(port, "/api/search?q=console-a");
    EXPECT_EQ(by_id["job"]["state"], "pending");
    EXPECT_EQ(by_id["job"]["body"]["text"], "job console-a");
    EXPECT_EQ(http_get(port, "/api/search?q=").status, 400);
    EXPECT_EQ(http_get(port, "/api/search?q=" + std::string(256, 'x')).status, 400);
    EXPECT_EQ(http_get(port, "/api/search?q=%FF").status, 400);

    // Cancel: never by GET; without or with a wrong token refused; with it, as a cancel command.
    EXPECT_NE(http_get(port, "/api/cancel?id=console-a").status, 200);
    EXPECT_EQ(http_post(port, "/api/cancel?id=console-a").status, 401);
    EXPECT_EQ(http_post(port, "/api/cancel?id=console-a", {{"X-Hourglass-Token", "wrong"}}).status, 401);
    EXPECT_EQ(job_state("console-a"), "pending");
    const auto cancelled = http_post(port, "/api/cancel?id=console-a", {{"X-Hourglass-Token", kToken}});
    EXPECT_EQ(cancelled.status, 200);
    EXPECT_EQ(json::parse(cancelled.body)["status"], "cancelled");
    EXPECT_EQ(job_state("console-a"), "cancelled");
    const auto unknown = http_post(port, "/api/cancel?id=nope", {{"X-Hourglass-Token", kToken}});
    EXPECT_EQ(json::parse(unknown.body)["status"], "not_found");
    EXPECT_THAT(process.log_tail(200), ::testing::Not(HasSubstr(kToken)));
    EXPECT_EQ(process.terminate(), 0);
}

// A cancel from the console of a job whose row another transaction keeps locked: answered at
// once with 409 and the reason (not a 503 blaming PostgreSQL), and applied when asked again
// after that transaction ends.
TEST_F(Console, a_cancel_of_a_job_locked_by_another_transaction_says_so_at_once) {
    auto& process = start_hourglass({"--console-token", kToken});
    Client client(amqp_url_);
    client.publish(delayed("console-locked", 600000));
    ASSERT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'console-locked'", "pending", 10s));
    pqxx::connection operator_session(pg_url_);
    pqxx::work held(operator_session);
    held.exec("UPDATE " + held.quote_name(schema_) +
              ".jobs SET routing_key = routing_key WHERE id = 'console-locked'");

    const auto port = process.http_port();
    const auto asked = std::chrono::steady_clock::now();
    const auto refused =
        http_post(port, "/api/cancel?id=console-locked", {{"X-Hourglass-Token", kToken}});
    EXPECT_LT(std::chrono::steady_clock::now() - asked, 2s);
    EXPECT_EQ(refused.status, 409) << refused.body;
    EXPECT_THAT(refused.body, HasSubstr("is locked by another PostgreSQL transaction"));

    held.commit();
    const auto cancelled =
        http_post(port, "/api/cancel?id=console-locked", {{"X-Hourglass-Token", kToken}});
    EXPECT_EQ(cancelled.status, 200) << cancelled.body;
    EXPECT_EQ(json::parse(cancelled.body)["status"], "cancelled");
    EXPECT_EQ(job_state("console-locked"), "cancelled");
}

// Pause, resume and cancel by prefix from the console: the paths of their commands (§3.3), only
// with the token; the count a cancel by prefix shows first is what it then cancels.
TEST_F(Console, pauses_resumes_and_cancels_by_prefix_with_the_token) {
    auto& process = start_hourglass({"--console-token", kToken});
    schedule_what_the_console_shows();
    const auto port = process.http_port();
    const std::vector<std::pair<std::string, std::string>> token = {{"X-Hourglass-Token", kToken}};

    EXPECT_EQ(http_post(port, "/api/pause?id=console-cron").status, 401);
    const auto paused = http_post(port, "/api/pause?id=console-cron", token);
    ASSERT_EQ(paused.status, 200) << paused.body;
    EXPECT_EQ(json::parse(paused.body)["status"], "paused");
    EXPECT_EQ(job_state("console-cron"), "paused");
    const auto cron = get_json(port, "/api/cron");
    ASSERT_EQ(cron.size(), 1u);
    EXPECT_EQ(cron[0]["paused"], true);
    const auto once = http_post(port, "/api/pause?id=console-a", token);
    EXPECT_EQ(json::parse(once.body)["status"], "rejected") << "only recurring jobs pause";
    const auto resumed = http_post(port, "/api/resume?id=console-cron", token);
    EXPECT_EQ(json::parse(resumed.body)["status"], "resumed");
    EXPECT_EQ(job_state("console-cron"), "pending");

    const auto counted = get_json(port, "/api/cancel-prefix?prefix=console.orders.");
    EXPECT_EQ(counted["count"], 2);
    EXPECT_EQ(counted["more"], false);
    EXPECT_EQ(http_get(port, "/api/cancel-prefix?prefix=").status, 400);
    EXPECT_EQ(http_post(port, "/api/cancel-prefix?prefix=console.orders.").status, 401);
    const auto cancelled = http_post(port, "/api/cancel-prefix?prefix=console.orders.", token);
    ASSERT_EQ(cancelled.status, 200) << cancelled.body;
    EXPECT_EQ(json::parse(cancelled.body)["count"], 2);
    EXPECT_EQ(job_state("console-a"), "cancelled");
    EXPECT_EQ(job_state("console-later"), "pending") << "another prefix";
    EXPECT_EQ(get_json(port, "/api/cancel-prefix?prefix=console.orders.")["count"], 0);
}

TEST_F(Console, without_a_token_it_is_read_only) {
    auto& process = start_hourglass();
    Client client(amqp_url_);
    client.publish(delayed("console-ro", 600000));
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs", "1"));
    EXPECT_EQ(json::parse(http_get(process.http_port(), "/api/summary").body)["cancel_enabled"], false);
    const auto refused = http_post(process.http_port(), "/api/cancel?id=console-ro",
                                   {{"X-Hourglass-Token", ""}});
    EXPECT_EQ(refused.status, 403);
    EXPECT_THAT(refused.body, HasSubstr("--console-token"));
    EXPECT_EQ(job_state("console-ro"), "pending");
    EXPECT_EQ(process.terminate(), 0);
}

// --console read refuses every change even with the operator token; a read token guards every
// /api/ read (the operator token reads too) but not the page's assets; --console off serves
// /metrics and the probes and no console at all.
TEST_F(Console, its_modes_and_read_token_decide_who_reads_and_who_changes) {
    constexpr const char* kReadToken = "console-read-token-0123456789";
    {
        auto& reader = start_hourglass({"--console", "read", "--console-token", kToken,
                                        "--console-read-token", kReadToken});
        wait_until_ready(reader);
        Client(amqp_url_).publish(delayed("console-modes", 600000));
        ASSERT_TRUE(eventually("SELECT count(*) FROM jobs", "1"));
        const auto port = reader.http_port();
        EXPECT_EQ(http_get(port, "/api/summary").status, 401);
        EXPECT_EQ(http_get(port, "/api/search?q=console-modes", {{"X-Hourglass-Token", "wrong"}}).status, 401);
        const auto read = http_get(port, "/api/search?q=console-modes", {{"X-Hourglass-Token", kReadToken}});
        EXPECT_EQ(read.status, 200);
        EXPECT_THAT(read.body, HasSubstr("console-modes"));
        EXPECT_EQ(http_get(port, "/api/summary", {{"X-Hourglass-Token", kToken}}).status, 200)
            << "the operator token reads too";
        EXPECT_EQ(http_get(port, "/").status, 200) << "the page holds no data";
        EXPECT_EQ(http_get(port, "/metrics").status, 200) << "the scrape needs no console token";
        const auto refused = http_post(port, "/api/cancel?id=console-modes", {{"X-Hourglass-Token", kToken}});
        EXPECT_EQ(refused.status, 403);
        EXPECT_THAT(refused.body, HasSubstr("--console read"));
        EXPECT_EQ(job_state("console-modes"), "pending");
        EXPECT_EQ(reader.terminate(), 0);
    }
    auto& off = start_hourglass({"--console", "off", "--console-token", kToken});
    wait_until_ready(off);
    const auto port = off.http_port();
    EXPECT_EQ(http_get(port, "/api/summary").status, 404);
    EXPECT_EQ(http_get(port, "/").status, 404);
    EXPECT_EQ(http_post(port, "/api/cancel?id=console-modes", {{"X-Hourglass-Token", kToken}}).status, 404);
    EXPECT_EQ(http_get(port, "/metrics").status, 200);
    EXPECT_TRUE(wait_for([&] { return http_get(port, "/readyz").status == 200; }, 10s))
        << "the probe is served (ready once every component connected)";
    EXPECT_EQ(off.terminate(), 0);
}

// The page in Debian's headless Chromium: what the API test checks, seen by a user.
TEST_F(Console, the_page_in_a_browser_shows_everything_escapes_user_text_and_cancels_with_the_token) {
    if (run_shell("test -x /usr/bin/chromium && test -x /usr/bin/chromedriver").exit_code != 0) {
        GTEST_SKIP() << "chromium and chromium-driver are not installed (scripts/install-deps)";
    }
    auto& process = start_hourglass({"--console-token", kToken});
    schedule_what_the_console_shows();
    const std::string artifacts = build_dir() + "/artifacts";
    std::filesystem::create_directories(artifacts);
    const auto flavour = std::getenv("HOURGLASS_SERVICES_FLAVOUR");
    const auto screenshot = artifacts + "/console-" + (flavour ? flavour : "debian12") + ".png";
    const auto result = run_shell(
        "timeout 120 /usr/bin/python3 " + source_dir() + "/tests/integration/console_browser.py" +
        " --url http://127.0.0.1:" + std::to_string(process.http_port()) + "/ --token '" + kToken +
        "' --job-id console-a --script-id \"" + kScriptId + "\" --cron-id console-cron"
        " --rejected-key console.bad.key --reason \"'soon'\" --prefix console.orders."
        " --screenshot " + screenshot);
    EXPECT_EQ(result.exit_code, 0) << result.output << process.log_tail();
    EXPECT_TRUE(std::filesystem::exists(screenshot)) << screenshot;
    // The cancel clicked in the page went through the store.
    EXPECT_EQ(job_state("console-a"), "cancelled");
    EXPECT_EQ(job_state(kScriptId), "pending");
    EXPECT_EQ(process.terminate(), 0);
}

}  // namespace
}  // namespace hourglass::testing
