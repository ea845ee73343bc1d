#include "common/thread_priority.hpp"

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace hourglass {

RealtimeMode parse_realtime_mode(std::string_view text) {
    if (text == "auto") return RealtimeMode::automatic;
    if (text == "off") return RealtimeMode::off;
    throw std::invalid_argument("--realtime-publisher: \"" + std::string(text.substr(0, 64)) +
                                "\" is neither auto nor off");
}

int make_this_thread_realtime(int priority) noexcept {
    sched_param parameters{};
    parameters.sched_priority = priority;
    // On Linux, pid 0 is the calling thread (scheduling is per thread). SCHED_RESET_ON_FORK: a
    // child process never inherits real-time scheduling from it.
    return sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &parameters) == 0 ? 0 : errno;
}

std::string realtime_refused_reason(int error) {
    std::string reason = std::strerror(error);
    if (error == EPERM) {
        reason += " (allow it with CAP_SYS_NICE or an RLIMIT_RTPRIO of at least 1, e.g. "
                  "LimitRTPRIO=1 in a systemd unit)";
    }
    return reason;
}

}  // namespace hourglass
