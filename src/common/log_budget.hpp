// A budget of log lines for a statement that runs once per message. Clients decide how often
// such a statement runs (a publisher can send 20,000 bad commands a second), and a line each
// would let them fill the disk with logs. Each call site keeps its own budget: the first
// `lines` events of a window are logged; the rest are counted, and the first line logged in a
// later window reports how many were left out (as the kernel's "callbacks suppressed"). The
// metrics, <prefix>.rejected and the console keep every event; the log is for a human reading
// it. Not thread-safe: one budget per call site and thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace hourglass {

class LogBudget {
  public:
    using Clock = std::chrono::steady_clock;

    static constexpr std::size_t kDefaultLines = 20;
    static constexpr Clock::duration kDefaultWindow = std::chrono::seconds{10};

    explicit LogBudget(std::size_t lines = kDefaultLines, Clock::duration window = kDefaultWindow)
        : lines_(lines), window_(window) {}

    struct Grant {
        bool log = false;          // this event may write its line
        std::size_t left_out = 0;  // events not logged before it, to report with it (if log)
    };

    // Spends one line of the budget for an event at `now`, if any is left.
    Grant take(Clock::time_point now);

  private:
    std::size_t lines_;
    Clock::duration window_;
    Clock::time_point window_start_{};
    bool started_ = false;
    std::size_t logged_ = 0;    // lines written in the current window
    std::size_t left_out_ = 0;  // events not logged since the last line written
};

// The end of a line that reports left-out events: "" for none, else
// " (1234 earlier <what> not logged)".
std::string left_out_note(std::size_t left_out, std::string_view what);

}  // namespace hourglass
