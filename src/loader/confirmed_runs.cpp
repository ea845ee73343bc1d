#include "loader/confirmed_runs.hpp"

#include <algorithm>
#include <iterator>

namespace hourglass::loader {

void ConfirmedRuns::push(std::vector<HandedOverRun> runs) {
    {
        std::lock_guard lock(mutex_);
        if (runs_.empty()) oldest_since_ = options_.now();
        std::move(runs.begin(), runs.end(), std::back_inserter(runs_));
    }
    changed_.notify_one();
}

void ConfirmedRuns::close() {
    {
        std::lock_guard lock(mutex_);
        closed_ = true;
    }
    changed_.notify_all();
}

bool ConfirmedRuns::closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
}

std::vector<HandedOverRun> ConfirmedRuns::take_batch(std::stop_token stop,
                                                     const LockedRowsRetry& retry, bool& ending) {
    std::unique_lock lock(mutex_);
    while (true) {
        ending = stop.stop_requested() && closed_;
        const auto now = options_.now();
        const bool oldest_waited = !runs_.empty() && now >= oldest_since_ + options_.record_every;
        if (ending || oldest_waited || runs_.size() >= options_.batch || retry.due(now)) break;
        auto wake_at = runs_.empty() ? now + options_.idle_wait : oldest_since_ + options_.record_every;
        if (retry.waiting()) wake_at = std::min(wake_at, retry.at());
        changed_.wait_for(lock, wake_at - now);
    }
    return std::exchange(runs_, {});
}

void ConfirmedRuns::put_back(std::vector<HandedOverRun> runs) {
    std::lock_guard lock(mutex_);
    if (runs_.empty()) oldest_since_ = options_.now();
    runs_.insert(runs_.begin(), std::make_move_iterator(runs.begin()), std::make_move_iterator(runs.end()));
}

bool ConfirmedRuns::full() const {
    std::lock_guard lock(mutex_);
    return runs_.size() > options_.capacity;
}

void ConfirmedRuns::interrupt() {
    std::lock_guard lock(mutex_);
    changed_.notify_all();
}

}  // namespace hourglass::loader
