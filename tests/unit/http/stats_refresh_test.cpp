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

}  // namespace
}  // namespace hourglass::http
