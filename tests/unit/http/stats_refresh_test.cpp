// How often the stats view is read (src/http/stats_refresher.hpp): every interval while reads
// are cheap, and never more than 1/kStatsReadShare of the time once a read takes long (at 10
// million jobs one read took 7 s of PostgreSQL CPU, every 5 s: the ingest rate halved).
#include <gtest/gtest.h>

#include "http/stats_refresher.hpp"

namespace hourglass::http {
namespace {

using std::chrono::milliseconds;

TEST(StatsRefresh, cheap_reads_keep_the_interval) {
    EXPECT_EQ(next_stats_refresh(milliseconds{5000}, milliseconds{0}), milliseconds{5000});
    EXPECT_EQ(next_stats_refresh(milliseconds{5000}, milliseconds{40}), milliseconds{5000});
    EXPECT_EQ(next_stats_refresh(milliseconds{5000}, milliseconds{250}), milliseconds{5000});
}

TEST(StatsRefresh, slow_reads_are_spaced_out) {
    // A 7 s read (10 million pending jobs) is followed by 140 s without one: 5 % of the time.
    EXPECT_EQ(next_stats_refresh(milliseconds{5000}, milliseconds{7000}), milliseconds{140000});
    EXPECT_EQ(next_stats_refresh(milliseconds{5000}, milliseconds{1000}), milliseconds{20000});
    EXPECT_GE(next_stats_refresh(milliseconds{5000}, milliseconds{7000}),
              milliseconds{7000} * kStatsReadShare);
}

// The two parts of the view (migration 014) keep paces of their own: at a busy hour the
// lateness percentiles took 1.3–1.75 s (3.6 M releases in the hour) while the counts took 4 ms.
// Read together, the job gauges and the oldest pending lag went stale for 26–35 s.
using Clock = StatsReadPace::Clock;

TEST(StatsReadPace, both_parts_are_due_at_the_start) {
    const StatsReadPace pace(milliseconds{5000});
    const auto now = Clock::now();
    EXPECT_TRUE(pace.counts_due(now));
    EXPECT_TRUE(pace.lateness_due(now));
    EXPECT_EQ(pace.wait(now), milliseconds{0});
}

TEST(StatsReadPace, a_slow_lateness_read_does_not_hold_up_the_counts) {
    StatsReadPace pace(milliseconds{5000});
    const auto t0 = Clock::now();
    pace.counts_read(t0, t0 + milliseconds{4});
    const auto lateness_started = t0 + milliseconds{4};
    const auto lateness_ended = lateness_started + milliseconds{1500};
    pace.lateness_read(lateness_started, lateness_ended);

    // The counts come back 5 s after their own read, whatever the percentiles cost.
    EXPECT_EQ(pace.wait(lateness_ended), milliseconds{5004 - 1504});
    EXPECT_FALSE(pace.counts_due(t0 + milliseconds{5003}));
    EXPECT_TRUE(pace.counts_due(t0 + milliseconds{5004}));
    // The percentiles wait 20 times their read: 30 s after it ended.
    EXPECT_FALSE(pace.lateness_due(lateness_ended + milliseconds{29999}));
    EXPECT_TRUE(pace.lateness_due(lateness_ended + milliseconds{30000}));
}

TEST(StatsReadPace, cheap_lateness_reads_keep_the_interval) {
    StatsReadPace pace(milliseconds{5000});
    const auto t0 = Clock::now();
    pace.counts_read(t0, t0 + milliseconds{3});
    pace.lateness_read(t0 + milliseconds{3}, t0 + milliseconds{30});
    EXPECT_FALSE(pace.lateness_due(t0 + milliseconds{5029}));
    EXPECT_TRUE(pace.lateness_due(t0 + milliseconds{5030}));
}

TEST(StatsReadPace, slow_counts_are_spaced_out_too) {
    StatsReadPace pace(milliseconds{5000});
    const auto t0 = Clock::now();
    pace.counts_read(t0, t0 + milliseconds{1000});
    EXPECT_EQ(pace.wait(t0 + milliseconds{1000}), milliseconds{20000});
}

}  // namespace
}  // namespace hourglass::http
