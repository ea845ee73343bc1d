// The ids of the runs this loader holds: from the moment they are scheduled until their
// hand-over is recorded, they are given back or forgotten. Reconciliation (reference §6, "a
// claim its owner does not hold is given back within seconds") compares it with the rows
// leased to this instance: a lease nobody here holds came from a commit whose reply was lost.
//
// Thread-safe: the claimer adds, the publisher and the recorder remove, the heartbeat reads.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "hourglass/job.hpp"

namespace hourglass::loader {

// The ids of `runs`, in order (what HeldRuns counts).
inline std::vector<std::string> ids_of(const std::vector<ClaimedRun>& runs) {
    std::vector<std::string> ids;
    ids.reserve(runs.size());
    for (const auto& run : runs) ids.push_back(run.id);
    return ids;
}

class HeldRuns {
public:
    template <typename Ids>
    void add(const Ids& ids) {
        std::lock_guard lock(mutex_);
        for (const auto& id : ids) ++count_[id];
    }
    template <typename Ids>
    void remove(const Ids& ids) {
        std::lock_guard lock(mutex_);
        for (const auto& id : ids) {
            const auto it = count_.find(id);
            if (it != count_.end() && --it->second == 0) count_.erase(it);
        }
    }
    void clear() {
        std::lock_guard lock(mutex_);
        count_.clear();
    }
    // Those of `leased` not held here.
    std::vector<std::string> not_held(const std::vector<std::string>& leased) const {
        std::lock_guard lock(mutex_);
        std::vector<std::string> orphans;
        for (const auto& id : leased) {
            if (!count_.contains(id)) orphans.push_back(id);
        }
        return orphans;
    }
    std::size_t size() const {
        std::lock_guard lock(mutex_);
        return count_.size();
    }

private:
    mutable std::mutex mutex_;
    std::unordered_map<std::string, std::size_t> count_;
};

}  // namespace hourglass::loader
