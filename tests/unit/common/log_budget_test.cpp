// LogBudget: a per-message log statement writes at most its budget of lines per window, and the
// first line of a later window reports how many events were left out.
#include "common/log_budget.hpp"

#include <gtest/gtest.h>

namespace hourglass {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(LogBudget, logs_the_first_lines_of_a_window_and_counts_the_rest) {
    LogBudget budget(3, seconds{10});
    const LogBudget::Clock::time_point start{seconds{1000}};
    std::size_t logged = 0;
    for (int i = 0; i < 20000; ++i) {
        const auto grant = budget.take(start + milliseconds{i / 4});  // 20,000 events in 5 s
        if (grant.log) {
            ++logged;
            EXPECT_EQ(grant.left_out, 0u) << "nothing was left out before the budget ran out";
        }
    }
    EXPECT_EQ(logged, 3u);

    // The next window: its first line reports the 19,997 left out, the next ones none.
    const auto first = budget.take(start + seconds{10});
    EXPECT_TRUE(first.log);
    EXPECT_EQ(first.left_out, 19997u);
    const auto second = budget.take(start + seconds{11});
    EXPECT_TRUE(second.log);
    EXPECT_EQ(second.left_out, 0u);
}

TEST(LogBudget, a_window_starts_at_the_first_event_after_the_last_one_ended) {
    LogBudget budget(1, seconds{10});
    const LogBudget::Clock::time_point start{seconds{1000}};
    EXPECT_TRUE(budget.take(start).log);
    EXPECT_FALSE(budget.take(start + milliseconds{9999}).log);
    // An hour of silence, then a burst: one line for it, reporting the one left out before.
    const auto after_silence = budget.take(start + seconds{3600});
    EXPECT_TRUE(after_silence.log);
    EXPECT_EQ(after_silence.left_out, 1u);
    EXPECT_FALSE(budget.take(start + seconds{3609}).log);
    EXPECT_TRUE(budget.take(start + seconds{3610}).log);
}

TEST(LogBudget, left_out_note_says_nothing_when_nothing_was_left_out) {
    EXPECT_EQ(left_out_note(0, "rejections"), "");
    EXPECT_EQ(left_out_note(19997, "rejections"), " (19997 earlier rejections not logged)");
}

}  // namespace
}  // namespace hourglass
