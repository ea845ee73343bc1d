// Real-time scheduling of the publisher thread (--realtime-publisher): the setting's values, and
// that the request either takes effect on the calling thread alone or reports why not.
#include "common/thread_priority.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <cerrno>
#include <stdexcept>
#include <thread>

namespace hourglass {
namespace {

TEST(ThreadPriority, the_setting_is_auto_or_off) {
    EXPECT_EQ(parse_realtime_mode("auto"), RealtimeMode::automatic);
    EXPECT_EQ(parse_realtime_mode("off"), RealtimeMode::off);
    EXPECT_THROW(parse_realtime_mode("on"), std::invalid_argument);
    EXPECT_THROW(parse_realtime_mode(""), std::invalid_argument);
}

// Granted (root, CAP_SYS_NICE, RLIMIT_RTPRIO >= 1): the calling thread runs SCHED_FIFO at the
// priority asked, and its children would not inherit it; the thread that started it keeps
// normal scheduling. Refused: EPERM, and nothing changed.
TEST(ThreadPriority, makes_the_calling_thread_realtime_or_reports_why_not) {
    int result = -1;
    int policy = -1;
    sched_param parameters{};
    std::jthread([&] {
        result = make_this_thread_realtime(kPublisherRealtimePriority);
        policy = sched_getscheduler(0);
        sched_getparam(0, &parameters);
    }).join();
    if (result == 0) {
        EXPECT_EQ(policy, SCHED_FIFO | SCHED_RESET_ON_FORK);
        EXPECT_EQ(parameters.sched_priority, kPublisherRealtimePriority);
    } else {
        EXPECT_EQ(result, EPERM);
        EXPECT_EQ(policy, SCHED_OTHER);
    }
    EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER) << "only the calling thread changes";
}

TEST(ThreadPriority, a_refusal_says_how_to_permit_it) {
    const auto reason = realtime_refused_reason(EPERM);
    EXPECT_NE(reason.find("CAP_SYS_NICE"), std::string::npos) << reason;
    EXPECT_NE(reason.find("LimitRTPRIO=1"), std::string::npos) << reason;
}

}  // namespace
}  // namespace hourglass
