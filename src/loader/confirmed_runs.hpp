// The hand-off from the publisher to the recorder: runs the broker confirmed, waiting to be
// recorded as handed over, in batches.
//
// push() never blocks nor drops: the publisher must never wait on PostgreSQL. The bound is
// upstream: while more than `capacity` runs wait here (the recorder fell behind), full() is
// true and the claimer claims nothing, so the runs that can still arrive are those already
// held. take_batch() is the recorder's one wait: it returns once a batch is ready, the oldest
// run waited `record_every`, locked rows are due again, or the publisher closed the hand-off
// and a stop was asked.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <stop_token>
#include <vector>

#include "common/retry.hpp"
#include "hourglass/job.hpp"

namespace hourglass::loader {

class ConfirmedRuns {
public:
    using Clock = std::chrono::steady_clock;

    struct Options {
        std::size_t batch = 1000;        // runs one record takes once that many wait
        Clock::duration record_every{};  // the longest the oldest run waits for its record
        Clock::duration idle_wait{};     // how often an idle recorder looks again
        std::size_t capacity = 30000;    // beyond it, full(): claims stop
        std::function<Clock::time_point()> now = [] { return Clock::now(); };
    };
    explicit ConfirmedRuns(Options options) : options_(std::move(options)) {}

    // The publisher: confirmed runs.
    void push(std::vector<HandedOverRun> runs);
    // The publisher stopped: nothing more comes.
    void close();
    bool closed() const;

    // The recorder. `ending` is set when the publisher closed and `stop` was asked: what is
    // returned is the last.
    std::vector<HandedOverRun> take_batch(std::stop_token stop, const LockedRowsRetry& retry,
                                          bool& ending);
    // A record failed: its runs go first into the next.
    void put_back(std::vector<HandedOverRun> runs);

    bool full() const;
    void interrupt();

private:
    Options options_;
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<HandedOverRun> runs_;
    Clock::time_point oldest_since_{};  // when the oldest of runs_ arrived
    bool closed_ = false;
};

}  // namespace hourglass::loader
