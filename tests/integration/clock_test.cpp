// One clock (reference §6): due times are compared on PostgreSQL's clock. An instance whose host
// clock runs ahead (libfaketime, Debian's faketime) measures its offset, corrects for it and
// releases nothing early; beyond --max-clock-offset it refuses to start with one clear line.
#include <gmock/gmock.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr const char* kFaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

// Children started while it lives see a clock `offset` ahead (steady clocks stay real).
class ClockAhead {
public:
    explicit ClockAhead(const std::string& offset) {
        setenv("LD_PRELOAD", kFaketime, 1);
        setenv("FAKETIME", offset.c_str(), 1);
        setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
    }
    ~ClockAhead() {
        unsetenv("LD_PRELOAD");
        unsetenv("FAKETIME");
        unsetenv("FAKETIME_DONT_FAKE_MONOTONIC");
    }
    ClockAhead(const ClockAhead&) = delete;
    ClockAhead& operator=(const ClockAhead&) = delete;
};

class Clock : public HourglassTest {
protected:
    void SetUp() override {
        HourglassTest::SetUp();
        ASSERT_EQ(access(kFaketime, R_OK), 0) << "faketime is not installed (scripts/install-deps)";
    }
};

TEST_F(Clock, a_host_clock_running_ahead_releases_nothing_early) {
    HourglassProcess* process = nullptr;
    {
        const ClockAhead ahead("+3s");
        process = &start_hourglass({"--max-clock-offset", "10s", "--horizon", "5s"});
    }
    Client receiver(amqp_url_);
    receiver.subscribe(out_exchange(), "#");
    // Absolute due times: an uncorrected clock 3 s ahead would release each about 3 s early.
    constexpr int kJobs = 100;
    const auto first_due = now_ms() + 4s;
    Client(amqp_url_).publish_all(scheduled_series("skew-", kJobs, first_due, 20ms));
    int early = 0, released = 0;
    double worst_early_ms = 0;
    for (const auto& r : receiver.drain(6000ms, 30s)) {  // the first is due 4 s from now
        const auto due = parse_rfc3339(string_header(r.message, "x-hourglass-due"));
        ++released;
        if (due && r.received_at < *due) {
            ++early;
            worst_early_ms = std::max(worst_early_ms, static_cast<double>((*due - r.received_at).count()));
        }
    }
    std::cout << "[clock 3 s ahead] released " << released << ", early " << early << " (worst "
              << worst_early_ms << " ms)\n";
    EXPECT_EQ(released, kJobs);
    EXPECT_EQ(early, 0);
    const auto metrics = http_get(process->http_port(), "/metrics").body;
    const auto at = metrics.find("\nhourglass_clock_offset_seconds ");
    ASSERT_NE(at, std::string::npos) << metrics;
    const double offset = std::stod(metrics.substr(at + 32));
    EXPECT_GT(offset, -3.5);
    EXPECT_LT(offset, -2.5);
}

TEST_F(Clock, a_host_clock_beyond_the_bound_is_refused_at_start) {
    CliResult result;
    {
        const ClockAhead ahead("+5s");
        result = run_cli({"run", "--schema", schema_, "--prefix", prefix_, "--http", "off",
                          "--amqp-url", amqp_url_, "--pg-url", pg_url_},
                         20s);
    }
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.exit_code, -1) << "it hung";
    EXPECT_THAT(result.err, HasSubstr("ahead of PostgreSQL's, more than --max-clock-offset (1s)"));
}

// The SQL door counts x-delay on PostgreSQL's clock, as the AMQP door does: it read the host's
// clock, so a host 4 s behind PostgreSQL's (accepted with --max-clock-offset 10s, corrected
// everywhere else) made a command inserted with x-delay 6000 due 2 s after it was written.
TEST_F(Clock, the_sql_intake_counts_x_delay_on_postgresqls_clock) {
    HourglassProcess* process = nullptr;
    {
        const ClockAhead behind("-4s");
        process = &start_hourglass({"--max-clock-offset", "10s"});
    }
    wait_until_ready(*process);
    const auto written = sql("INSERT INTO commands (routing_key, body, properties, headers) VALUES "
                             "('jobs.test', 'late enough', '{\"message_id\": \"sql-delay\"}', "
                             "'{\"x-delay\": 6000}') RETURNING clock_timestamp()::text")[0][0]
                             .as<std::string>();
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs WHERE id = 'sql-delay'", "1"))
        << process->log_tail();
    const auto after_ms =
        sql("SELECT floor(extract(epoch FROM due_at - '" + written + "'::timestamptz) * 1000)::bigint "
            "FROM jobs WHERE id = 'sql-delay'")[0][0].as<std::int64_t>();
    std::cout << "[SQL intake, host 4 s behind] due " << after_ms << " ms after the insert\n";
    EXPECT_GE(after_ms, 5990) << "due before x-delay had passed on PostgreSQL's clock (to the take's ms)";
    EXPECT_LT(after_ms, 8000);
}

// A forward step of the host's clock while runs wait in memory: the one clock followed the
// host's clock until the next heartbeat measured the step away, so the runs due within the
// step were published at once and released up to 5 s early. Now it runs on the monotonic clock
// between measurements. libfaketime reads the offset from a file the test rewrites.
TEST_F(Clock, a_forward_step_of_the_host_clock_releases_nothing_early) {
    const auto offset_file = std::filesystem::temp_directory_path() / ("hourglass-step-" + prefix_);
    const auto set_offset = [&](const char* offset) { std::ofstream(offset_file) << offset << "\n"; };
    set_offset("+0s");
    HourglassProcess* process = nullptr;
    {
        const ClockAhead stepping("");
        setenv("FAKETIME_TIMESTAMP_FILE", offset_file.c_str(), 1);
        setenv("FAKETIME_NO_CACHE", "1", 1);
        unsetenv("FAKETIME");
        process = &start_hourglass({"--max-clock-offset", "10s", "--horizon", "10s"});
        unsetenv("FAKETIME_TIMESTAMP_FILE");
        unsetenv("FAKETIME_NO_CACHE");
    }
    wait_until_ready(*process);
    Client receiver(amqp_url_);
    receiver.subscribe(out_exchange(), "#");
    constexpr int kJobs = 60;
    const auto first_due = now_ms() + 4s;
    Client(amqp_url_).publish_all(scheduled_series("step-", kJobs, first_due, 50ms));
    // Every run in hand before the step: in memory for its publish instant (up to a ladder step,
    // 1 s), or already in its delay queue. Waiting for all 60 leased at once, as this did, caught
    // them only when both claims came before the first hand-over was recorded: a second claim at
    // the next poll (500 ms) made it fail, nothing released early.
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs WHERE lease_owner IS NOT NULL OR state <> 'pending'",
                           std::to_string(kJobs), 3s))
        << process->log_tail();
    set_offset("+5s");
    int early = 0, released = 0;
    for (const auto& r : receiver.drain(6000ms, 20s)) {  // the first is due about 3 s from now
        const auto due = parse_rfc3339(string_header(r.message, "x-hourglass-due"));
        ++released;
        if (due && r.received_at < *due) ++early;
    }
    std::filesystem::remove(offset_file);
    std::cout << "[host clock stepped 5 s ahead] released " << released << ", early " << early << "\n";
    EXPECT_EQ(released, kJobs);
    EXPECT_EQ(early, 0);
}

}  // namespace
}  // namespace hourglass::testing
