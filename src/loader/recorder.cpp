// The loader's recorder thread: records confirmed runs as handed over, in batches.
#include "loader/loader.hpp"

#include <spdlog/spdlog.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/retry.hpp"

namespace hourglass::loader {

void Loader::record_loop(std::stop_token stop) {
    auto store_options = options_.store;
    store_options.open_connections = nullptr;  // the loader's own connection counts for it
    // Recorder thread only; kept across reconnects.
    std::vector<HandedOverRun> locked;
    LockedRowsRetry retry;
    run_with_reconnect("loader (recorder)", stop, [&] {
        const auto store = seams_.open_store(store_options);
        while (true) {
            bool ending = false;
            auto handed_over = confirmed_.take_batch(stop, retry, ending);
            const bool tried_locked = ending || retry.due(seams_.steady_now());
            const auto before = locked.size();
            if (tried_locked) {
                handed_over.insert(handed_over.end(), std::make_move_iterator(locked.begin()),
                                   std::make_move_iterator(locked.end()));
                locked.clear();
            }
            if (ending && handed_over.empty()) break;
            std::vector<HandedOverRun> left;
            try {
                left = store->record_handed_over(options_.owner, handed_over);
            } catch (...) {
                confirmed_.put_back(std::move(handed_over));
                throw;
            }
            const auto recorded = handed_over.size() - left.size();
            forget_recorded(handed_over, left);
            handed_over_total_ += recorded;
            metrics_.count_runs_enqueued(recorded);
            spdlog::debug("loader: {} runs handed over", recorded);
            if (ending && !left.empty()) {
                // Their claims stay with this instance's lease, which the next instance takes
                // over once the lock is gone: they are published again (at least once).
                spdlog::warn(
                    "loader: stopping with {} handed-over runs not recorded: another "
                    "PostgreSQL transaction holds their rows",
                    left.size());
                left.clear();
            }
            locked.insert(locked.end(), std::make_move_iterator(left.begin()),
                          std::make_move_iterator(left.end()));
            if (!locked.empty() && !retry.waiting()) {
                spdlog::warn(
                    "loader: {} handed-over runs wait to be recorded: another PostgreSQL "
                    "transaction holds their rows; the runs handed over meanwhile are "
                    "recorded",
                    locked.size());
            } else if (tried_locked && before > 0 && locked.empty()) {
                spdlog::info(
                    "loader: the {} handed-over runs that waited for locked rows are "
                    "recorded",
                    before);
            }
            retry.settled(seams_.steady_now(), !locked.empty(), tried_locked);
            metrics_.set_handovers_waiting(locked.size());
            claimer_doorbell_.ring();  // the hand-off may have been full: claims go on
        }
    });
    recorder_done_ = true;
    claimer_doorbell_.ring();
}

void Loader::forget_recorded(const std::vector<HandedOverRun>& handed_over,
                             const std::vector<HandedOverRun>& left) {
    std::set<std::string> waiting;
    for (const auto& run : left) waiting.insert(run.id);
    std::vector<std::string> recorded;
    recorded.reserve(handed_over.size());
    for (const auto& run : handed_over) {
        if (!waiting.contains(run.id)) recorded.push_back(run.id);
    }
    held_.remove(recorded);
}

}  // namespace hourglass::loader
