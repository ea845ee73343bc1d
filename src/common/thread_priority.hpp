// Real-time scheduling for the one thread whose punctuality users see: the loader's publisher
// hands each run to its delay queue at due − TTL, and a release is late by however late that
// publish is. On a busy machine a thread under the normal (fair) scheduler waits for a CPU
// behind the broker and PostgreSQL; a SCHED_FIFO thread runs as soon as it wakes.
#pragma once

#include <string>
#include <string_view>

namespace hourglass {

// --realtime-publisher: `automatic` asks for SCHED_FIFO and keeps the normal scheduler when
// the process may not have it; `off` never asks.
enum class RealtimeMode { automatic, off };

// "auto" or "off"; throws std::invalid_argument naming the value otherwise.
RealtimeMode parse_realtime_mode(std::string_view text);

// The lowest real-time priority: above every normal thread, below the kernel's own real-time
// threads (watchdog, migration), which must keep preempting it.
inline constexpr int kPublisherRealtimePriority = 1;

// Puts the calling thread under SCHED_FIFO at `priority`. Returns 0, or the errno: EPERM when
// the process has neither CAP_SYS_NICE nor an RLIMIT_RTPRIO of at least `priority`.
int make_this_thread_realtime(int priority) noexcept;

// What an operator reads when the request is refused: the error and how to permit it.
std::string realtime_refused_reason(int error);

}  // namespace hourglass
