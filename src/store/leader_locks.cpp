#include "store/leader_locks.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace hourglass::store {

namespace {

std::string seconds(Milliseconds duration) {
    return std::to_string(duration.count() / 1000) + " s";
}

}  // namespace

std::string describe(const LeaderLockHolder& holder) {
    std::string text = "pid " + std::to_string(holder.pid) + " (role " +
                       (holder.role.empty() ? "?" : holder.role);
    if (!holder.application.empty()) text += ", application " + holder.application;
    if (!holder.state.empty()) text += ", " + holder.state;
    if (holder.open_for) text += ", open " + seconds(*holder.open_for);
    return text + ")";
}

LeaderLockWatch::LeaderLockWatch(std::string lock, std::string task, std::string stopped,
                                 Milliseconds warn_after, Milliseconds repeat)
    : lock_(std::move(lock)),
      task_(std::move(task)),
      stopped_(std::move(stopped)),
      warn_after_(warn_after),
      repeat_(repeat) {}

std::optional<std::string> LeaderLockWatch::held_elsewhere(
    const std::vector<LeaderLockHolder>& holders, Clock::time_point now) {
    const auto holder = std::find_if(holders.begin(), holders.end(),
                                     [&](const LeaderLockHolder& one) { return one.lock == lock_; });
    // Its transaction ended between the attempt and the read: the next attempt will tell.
    if (holder == holders.end()) return std::nullopt;
    if (holder_ != holder->transaction_id) {
        holder_ = holder->transaction_id;
        held_since_ = now;
        warned_at_.reset();
    }
    // Seen since held_since_, or open longer than that where PostgreSQL shows when it began.
    const auto held_for = std::max(std::chrono::duration_cast<Milliseconds>(now - held_since_),
                                   holder->open_for.value_or(Milliseconds{0}));
    if (held_for < warn_after_ || (warned_at_ && now - *warned_at_ < repeat_)) return std::nullopt;
    warned_at_ = now;
    return task_ + ": " + stopped_ + " while another transaction holds the leader lock '" + lock_ +
           "' (its row in leader_locks), for " + seconds(held_for) + " so far: " +
           describe(*holder) + ". End that transaction if it is not meant to last (SELECT " +
           "pg_terminate_backend(" + std::to_string(holder->pid) + "))";
}

std::optional<std::string> LeaderLockWatch::taken(Clock::time_point now) {
    const bool warned = warned_at_.has_value();
    const auto held_for = std::chrono::duration_cast<Milliseconds>(now - held_since_);
    holder_.reset();
    warned_at_.reset();
    if (!warned) return std::nullopt;
    return task_ + ": the leader lock '" + lock_ + "' is free again after at least " +
           seconds(held_for) + "; going on";
}

void LeaderLockWatch::log(bool held_elsewhere, LeaderLockStore& store, Clock::time_point now) {
    if (!held_elsewhere) {
        if (const auto line = taken(now)) spdlog::info("{}", *line);
        return;
    }
    if (holders_read_at_ && now - *holders_read_at_ < kHolderReadEvery) return;
    holders_read_at_ = now;
    if (const auto line = this->held_elsewhere(store.leader_lock_holders(), now)) {
        spdlog::warn("{}", *line);
    }
}

}  // namespace hourglass::store
