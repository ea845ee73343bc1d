#include "common/retry.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <utility>

namespace hourglass {

bool sleep_unless_stopped(std::stop_token stop, std::chrono::milliseconds duration) {
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    return !wake.wait_for(lock, stop, duration, [] { return false; }) && !stop.stop_requested();
}

void run_with_reconnect(const std::string& component, std::stop_token stop,
                        const std::function<void()>& body, Backoff backoff) {
    auto delay = backoff.initial;
    int failures = 0;
    std::string last_error;  // a failure repeating while the peer stays down is logged once
    while (!stop.stop_requested()) {
        const auto started = std::chrono::steady_clock::now();
        try {
            body();
            return;
        } catch (const std::exception& error) {
            ++failures;
            // A connection that worked for a while starts the backoff over.
            if (std::chrono::steady_clock::now() - started > std::chrono::seconds{30}) {
                delay = backoff.initial;
                failures = 1;
                last_error.clear();
            }
            const auto level =
                error.what() == last_error ? spdlog::level::debug : spdlog::level::warn;
            spdlog::log(level, "{}: {} (retry {} in {} ms)", component, error.what(), failures,
                        delay.count());
            last_error = error.what();
        }
        if (!sleep_unless_stopped(stop, delay)) return;
        delay = std::min(delay * 2, backoff.max);
    }
}

void LockedRowsRetry::settled(Clock::time_point now, bool waiting, bool tried_waiting) {
    const bool was_waiting = std::exchange(waiting_, waiting);
    if (!waiting) {
        backoff_ = kFirst;
    } else if (tried_waiting && was_waiting) {
        backoff_ = std::min(backoff_ * 2, kLast);
        at_ = now + backoff_;
    } else if (!was_waiting) {
        at_ = now + backoff_;
    }
}

}  // namespace hourglass
