#include "loader/recorder.hpp"

#include <spdlog/spdlog.h>

#include <iterator>
#include <set>
#include <utility>

namespace hourglass::loader {

Recorder::Recorder(std::string owner, Neighbours neighbours, StageClock clock)
    : owner_(std::move(owner)), with_(neighbours), clock_(std::move(clock)) {}

void Recorder::run(std::stop_token stop, const store::OpenClaimStore& open_store,
                   const store::StoreOptions& store_options) {
    run_with_reconnect("loader (recorder)", stop, [&] {
        const auto store = open_store(store_options);
        while (record_batch(*store, stop)) {
        }
    });
    done_ = true;
    with_.claimer.ring();
}

bool Recorder::record_batch(store::ClaimStore& store, std::stop_token stop) {
    bool ending = false;
    auto handed_over = with_.confirmed.take_batch(stop, retry_, ending);
    const bool tried_locked = ending || retry_.due(clock_.steady());
    const auto before = locked_.size();
    if (tried_locked) {
        handed_over.insert(handed_over.end(), std::make_move_iterator(locked_.begin()),
                           std::make_move_iterator(locked_.end()));
        locked_.clear();
    }
    if (ending && handed_over.empty()) return false;
    std::vector<HandedOverRun> left;
    try {
        left = store.record_handed_over(owner_, handed_over);
    } catch (...) {
        with_.confirmed.put_back(std::move(handed_over));
        throw;
    }
    const auto recorded = handed_over.size() - left.size();
    forget_recorded(handed_over, left);
    recorded_total_ += recorded;
    with_.metrics.count_runs_enqueued(recorded);
    spdlog::debug("loader: {} runs handed over", recorded);
    if (ending && !left.empty()) {
        // Their claims stay with this instance's lease, which the next instance takes over
        // once the lock is gone: they are published again (at least once).
        spdlog::warn("loader: stopping with {} handed-over runs not recorded: another "
                     "PostgreSQL transaction holds their rows",
                     left.size());
        left.clear();
    }
    locked_.insert(locked_.end(), std::make_move_iterator(left.begin()),
                   std::make_move_iterator(left.end()));
    if (!locked_.empty() && !retry_.waiting()) {
        spdlog::warn("loader: {} handed-over runs wait to be recorded: another PostgreSQL "
                     "transaction holds their rows; the runs handed over meanwhile are recorded",
                     locked_.size());
    } else if (tried_locked && before > 0 && locked_.empty()) {
        spdlog::info("loader: the {} handed-over runs that waited for locked rows are recorded",
                     before);
    }
    retry_.settled(clock_.steady(), !locked_.empty(), tried_locked);
    with_.metrics.set_handovers_waiting(locked_.size());
    with_.claimer.ring();  // the hand-off may have been full: claims go on
    return true;
}

void Recorder::forget_recorded(const std::vector<HandedOverRun>& handed_over,
                               const std::vector<HandedOverRun>& left) {
    std::set<std::string> waiting;
    for (const auto& run : left) waiting.insert(run.id);
    std::vector<std::string> recorded;
    recorded.reserve(handed_over.size());
    for (const auto& run : handed_over) {
        if (!waiting.contains(run.id)) recorded.push_back(run.id);
    }
    with_.held.remove(recorded);
}

}  // namespace hourglass::loader
