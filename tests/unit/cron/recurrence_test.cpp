// The loader's next run of a recurring job (cron/recurrence.hpp): missed runs coalesced, and
// the log line about them bounded, since one claim after an outage may coalesce the runs of
// thousands of jobs due at the same minute.
#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

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
    EXPECT_FALSE(next_due(run, run.due_at).next_due.has_value());
}

TEST(NextDueAfterHandover, coalesces_missed_runs_and_logs_a_bounded_number_of_lines_about_them) {
    const CapturedLog log;
    NextDueAfterHandover next_due;
    const auto now = from_epoch_ms(1795339830000);  // 30 s into a minute
    const auto due = now - 10min - 30s;              // ten runs missed since
    for (int i = 0; i < 1000; ++i) {
        const auto after = next_due(every_minute("job-" + std::to_string(i), due), now);
        ASSERT_TRUE(after.next_due.has_value());
        EXPECT_EQ(*after.next_due, now + 30s) << "the schedule continues from now";
        EXPECT_EQ(after.catchup, 11u) << "released once, standing for the eleven missed runs";
        EXPECT_FALSE(after.skip);
    }
    const auto lines = log.lines_containing("coalesced into run 3");
    EXPECT_GE(lines, 1u);
    EXPECT_LE(lines, LogBudget::kDefaultLines) << "a line per job of a popular cron minute";
}

TEST(NextDueAfterHandover, a_run_handed_over_before_it_is_due_coalesces_nothing) {
    const CapturedLog log;
    NextDueAfterHandover next_due;
    const auto due = from_epoch_ms(1795339860000);  // a whole minute
    const auto after = next_due(every_minute("on-time", due), due - 20s);
    ASSERT_TRUE(after.next_due.has_value());
    EXPECT_EQ(*after.next_due, due + 1min);
    EXPECT_EQ(after.catchup, 0u) << "not missed: no x-hourglass-catchup";
    EXPECT_EQ(log.lines_containing("coalesced"), 0u);
}

// Late, but no later run due yet (hourglass was down for less than the schedule's period): a
// late run, not a missed one, whatever the policy.
TEST(NextDueAfterHandover, a_late_run_with_no_later_run_due_is_not_missed) {
    for (const auto policy : {Catchup::skip, Catchup::one, Catchup::all}) {
        NextDueAfterHandover next_due;
        auto run = every_minute("late", from_epoch_ms(1795339860000));
        run.cron->catchup = policy;
        const auto after = next_due(run, run.due_at + 40s);
        EXPECT_EQ(after.next_due, run.due_at + 1min) << to_string(policy);
        EXPECT_EQ(after.catchup, 0u) << to_string(policy);
        EXPECT_FALSE(after.skip) << to_string(policy);
    }
}

TEST(NextDueAfterHandover, skip_sends_a_missed_run_away_and_goes_on_from_now) {
    NextDueAfterHandover next_due;
    const auto now = from_epoch_ms(1795339830000);  // 30 s into a minute
    auto run = every_minute("skipping", now - 10min - 30s);
    run.cron->catchup = Catchup::skip;
    const auto after = next_due(run, now);
    EXPECT_TRUE(after.skip);
    EXPECT_EQ(after.catchup, 0u);
    EXPECT_EQ(after.next_due, now + 30s);
}

// `all`: each missed run in turn, each marked, until the last one due, which is merely late.
TEST(NextDueAfterHandover, all_releases_each_missed_run_in_turn) {
    NextDueAfterHandover next_due;
    const auto now = from_epoch_ms(1795339830000);
    auto run = every_minute("all", now - 3min - 30s);  // runs at -3:30, -2:30, -1:30, -0:30
    run.cron->catchup = Catchup::all;
    std::vector<std::size_t> marks;
    for (int i = 0; i < 4; ++i) {
        const auto after = next_due(run, now);
        ASSERT_TRUE(after.next_due.has_value());
        EXPECT_FALSE(after.skip);
        marks.push_back(after.catchup);
        run.due_at = *after.next_due;
        ++run.run;
    }
    EXPECT_EQ(marks, (std::vector<std::size_t>{1, 1, 1, 0}));
    EXPECT_EQ(run.due_at, now + 30s) << "after the catch-up, the schedule goes on from now";
}

// `all` releases at most kMaxCatchupRuns missed runs: the older ones fold into the first.
TEST(NextDueAfterHandover, all_releases_at_most_the_bound_of_missed_runs) {
    NextDueAfterHandover next_due;
    const auto now = from_epoch_ms(1795339830000);
    auto run = every_minute("all", now - std::chrono::minutes(kMaxCatchupRuns + 500) - 30s);
    run.cron->catchup = Catchup::all;
    const auto after = next_due(run, now);
    // 1,500 later runs are due: this one and the latest 999 are released, 501 fold into this.
    EXPECT_EQ(after.catchup, 502u);
    ASSERT_TRUE(after.next_due.has_value());
    EXPECT_EQ(*after.next_due, now - std::chrono::minutes(kMaxCatchupRuns - 2) - 30s)
        << "kMaxCatchupRuns - 1 later runs remain, released one by one";
}

}  // namespace
}  // namespace hourglass::cron
