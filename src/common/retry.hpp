// Runs a component's connect-and-work loop forever, reconnecting with exponential backoff
// (reference §9: survives restarts of RabbitMQ and PostgreSQL). The body returns normally only when
// the component is asked to stop; an exception means a lost connection: log, wait, start again.
#pragma once

#include <chrono>
#include <functional>
#include <stop_token>
#include <string>

namespace hourglass {

struct Backoff {
    std::chrono::milliseconds initial{100};
    std::chrono::milliseconds max{10000};
};

// Sleeps up to `duration`, waking early when a stop is requested. Returns false on stop.
bool sleep_unless_stopped(std::stop_token stop, std::chrono::milliseconds duration);

void run_with_reconnect(const std::string& component, std::stop_token stop,
                        const std::function<void()>& body, Backoff backoff = {});

// When to try again work that waits for rows another PostgreSQL transaction holds (ingest's
// commands, the loader's records of hand-overs and its give-backs of refused claims, the audit's
// records of releases): 250 ms after it starts to wait, then twice as
// long after each try that finds it still waiting, at most every 4 s. Work that goes by
// meanwhile does not move the time.
class LockedRowsRetry {
  public:
    using Clock = std::chrono::steady_clock;
    static constexpr std::chrono::milliseconds kFirst{250};
    static constexpr std::chrono::milliseconds kLast{4000};

    // After a round of work at `now`: whether some work still waits, and whether this round
    // tried the work that waited before it.
    void settled(Clock::time_point now, bool waiting, bool tried_waiting);
    // Whether work waits and its time to be tried again has come.
    bool due(Clock::time_point now) const noexcept { return waiting_ && now >= at_; }
    bool waiting() const noexcept { return waiting_; }
    // The time to try the waiting work again (meaningful while waiting()).
    Clock::time_point at() const noexcept { return at_; }

  private:
    bool waiting_ = false;
    Clock::time_point at_{};
    std::chrono::milliseconds backoff_{kFirst};
};

}  // namespace hourglass
