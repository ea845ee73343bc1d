#include "loader/schedule_board.hpp"

#include <algorithm>

namespace hourglass::loader {

void PublishSchedule::push(ScheduledRun scheduled) {
    heap_.push_back(std::move(scheduled));
    std::push_heap(heap_.begin(), heap_.end(), later);
}

ScheduledRun PublishSchedule::take_top() {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    auto top = std::move(heap_.back());
    heap_.pop_back();
    // After a hotspot, give back the room it took (the vector would keep its peak capacity).
    if (heap_.capacity() > 4096 && heap_.size() < heap_.capacity() / 4) heap_.shrink_to_fit();
    return top;
}

ClaimRoom ScheduleBoard::room_for_claim() const {
    std::lock_guard lock(mutex_);
    // Burst runs have bounds of their own (the plan); runs ingest may claim at insert count
    // from their offer on.
    return {.runs = ledger_.claim_runs(held_locked()), .bytes = ledger_.claim_bytes()};
}

bool ScheduleBoard::has_room_for(std::size_t runs) const {
    std::lock_guard lock(mutex_);
    return ledger_.claim_runs(held_locked()) >= runs;
}

std::size_t ScheduleBoard::schedule(std::vector<ScheduledRun> runs, const Plan& plan) {
    std::size_t held_now = 0;
    {
        std::lock_guard lock(mutex_);
        if (plan) plan(runs, ledger_);
        for (auto& run : runs) {
            ledger_.hold(run.bytes);
            schedule_.push(std::move(run));
        }
        ++generation_;
        held_now = held_locked();
    }
    runs_added_.notify_one();
    return held_now;
}

std::vector<std::string> ScheduleBoard::forget_scheduled() {
    std::lock_guard lock(mutex_);
    std::vector<std::string> forgotten;
    forgotten.reserve(schedule_.size());
    while (!schedule_.empty()) {
        const auto run = schedule_.take_top();
        ledger_.forget(run.bytes, run.burst_held);
        forgotten.push_back(run.run->id);
    }
    ++generation_;
    return forgotten;
}

std::vector<std::string> ScheduleBoard::take_unpublished() {
    std::lock_guard lock(mutex_);
    std::vector<std::string> unpublished;
    while (!schedule_.empty()) unpublished.push_back(schedule_.take_top().run->id);
    ledger_.forget_all();
    return unpublished;
}

std::optional<ClaimRoom> ScheduleBoard::reserve(std::size_t runs, std::size_t bytes) {
    std::lock_guard lock(mutex_);
    const ClaimRoom room{.runs = std::min(runs, ledger_.claim_runs(held_locked())),
                         .bytes = std::min(bytes, ledger_.claim_bytes())};
    if (room.runs == 0 || room.bytes == 0) return std::nullopt;
    ledger_.reserve(room.runs, room.bytes);
    return room;
}

void ScheduleBoard::end_reservation(ClaimRoom reserved) {
    std::lock_guard lock(mutex_);
    ledger_.end_reservation(reserved.runs, reserved.bytes);
}

ScheduleBoard::Due ScheduleBoard::take_due(TimePoint now, std::size_t max_unconfirmed,
                                           std::optional<Milliseconds> near_rung) {
    Due due;
    std::lock_guard lock(mutex_);
    while (!schedule_.empty() && schedule_.top().publish_at <= now && in_flight_ < max_unconfirmed) {
        auto run = schedule_.take_top();
        if (near_rung && !run.burst && run.run->due_at - now > *near_rung &&
            ledger_.room_to_hold_longer(held_locked())) {
            // Later than `now`: taken again at the near rung's instant, not in this loop.
            run.publish_at = run.run->due_at - *near_rung;
            schedule_.push(std::move(run));
            ++due.held_for_near_rung;
            continue;
        }
        due.runs.push_back(std::move(run));
        ++in_flight_;
    }
    due.window_full = in_flight_ >= max_unconfirmed;
    if (!schedule_.empty()) due.next_publish = schedule_.top().publish_at;
    due.held = held_locked();
    return due;
}

void ScheduleBoard::forget_published(const std::vector<const ScheduledRun*>& runs) {
    std::lock_guard lock(mutex_);
    for (const auto* run : runs) ledger_.forget(run->bytes, run->burst_held);
    in_flight_ -= std::min(in_flight_, runs.size());
}

void ScheduleBoard::wait_for_runs(std::chrono::steady_clock::duration wait, std::stop_token stop) {
    std::unique_lock lock(mutex_);
    const auto generation = generation_;
    runs_added_.wait_for(lock, wait, [&] { return stop.stop_requested() || generation_ != generation; });
}

void ScheduleBoard::interrupt() {
    // Under the lock: a waiter between its check and its wait cannot miss it.
    std::lock_guard lock(mutex_);
    runs_added_.notify_all();
}

std::size_t ScheduleBoard::held() const {
    std::lock_guard lock(mutex_);
    return held_locked();
}

}  // namespace hourglass::loader
