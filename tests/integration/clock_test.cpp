// One clock (reference §6): due times are compared on PostgreSQL's clock. An instance whose host
// clock runs ahead (libfaketime, Debian's faketime) measures its offset, corrects for it and
// releases nothing early; beyond --max-clock-offset it refuses to start with one clear line.
#include <gmock/gmock.h>
#include <unistd.h>

#include <cstdlib>

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

}  // namespace
}  // namespace hourglass::testing
