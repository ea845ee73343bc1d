// The loader's next run of a recurring job (cron/recurrence.hpp): missed runs coalesced, and
// the log line about them bounded, since one claim after an outage may coalesce the runs of
// thousands of jobs due at the same minute.
#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>

#include "cron/recurrence.hpp"
#include "hourglass/time.hpp"

namespace hourglass::cron {
namespace {

using namespace std::chrono_literals;

// Routes the default logger into a string for the test's lifetime.
class CapturedLog {
public:
    CapturedLog() : previous_(spdlog::default_logger()) {
        auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text_);
        auto logger = std::make_shared<spdlog::logger>("captured", sink);
        logger->set_level(spdlog::level::info);
        spdlog::set_default_logger(logger);
    }
    ~CapturedLog() { spdlog::set_default_logger(previous_); }
    CapturedLog(const CapturedLog&) = delete;
    CapturedLog& operator=(const CapturedLog&) = delete;

    std::size_t lines_containing(const std::string& needle) const {
        std::istringstream lines(text_.str());
        std::size_t count = 0;
        for (std::string line; std::getline(lines, line);) count += line.find(needle) != std::string::npos;
        return count;
    }

private:
    std::ostringstream text_;
    std::shared_ptr<spdlog::logger> previous_;
};

ClaimedRun every_minute(const std::string& id, TimePoint due) {
    ClaimedRun run;
    run.id = id;
    run.due_at = due;
    run.run = 3;
    run.cron = CronSpec{"* * * * *", "UTC", {}, {}};
    return run;
}

TEST(NextDueAfterHandover, one_shot_runs_have_no_next_run) {
    NextDueAfterHandover next_due;
    ClaimedRun run;
    run.id = "once";
    run.due_at = from_epoch_ms(1795339800000);
    EXPECT_FALSE(next_due(run, run.due_at).has_value());
}

TEST(NextDueAfterHandover, coalesces_missed_runs_and_logs_a_bounded_number_of_lines_about_them) {
    const CapturedLog log;
    NextDueAfterHandover next_due;
    const auto now = from_epoch_ms(1795339830000);  // 30 s into a minute
    const auto due = now - 10min - 30s;              // ten runs missed since
    for (int i = 0; i < 1000; ++i) {
        const auto next = next_due(every_minute("job-" + std::to_string(i), due), now);
        ASSERT_TRUE(next.has_value());
        EXPECT_EQ(*next, now + 30s) << "the schedule continues from now";
    }
    const auto lines = log.lines_containing("coalesced into run 3");
    EXPECT_GE(lines, 1u);
    EXPECT_LE(lines, LogBudget::kDefaultLines) << "a line per job of a popular cron minute";
}

TEST(NextDueAfterHandover, a_run_handed_over_before_it_is_due_coalesces_nothing) {
    const CapturedLog log;
    NextDueAfterHandover next_due;
    const auto due = from_epoch_ms(1795339860000);  // a whole minute
    const auto next = next_due(every_minute("on-time", due), due - 20s);
    ASSERT_TRUE(next.has_value());
    EXPECT_EQ(*next, due + 1min);
    EXPECT_EQ(log.lines_containing("coalesced"), 0u);
}

}  // namespace
}  // namespace hourglass::cron
