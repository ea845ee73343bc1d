// The recorder stage (reference §6.2): on a thread and a PostgreSQL connection of its own,
// records as handed over (`enqueued`) the runs the broker confirmed, in batches
// (ConfirmedRuns decides when a batch is ready), so that the publisher never waits on
// PostgreSQL. A run whose row another transaction holds waits aside and is tried again when
// LockedRowsRetry says, holding up no other record. A recorded run is no longer held
// (HeldRuns); each batch rings the claimer, whose claims stop while the hand-off is full.
// Takes: the publisher's hand-off of confirmed runs. Owns: the runs waiting for locked rows,
// their retry, and the count of runs recorded.
#pragma once

#include <atomic>
#include <cstdint>
#include <stop_token>
#include <string>
#include <vector>

#include "common/retry.hpp"
#include "hourglass/job.hpp"
#include "loader/claimer_inbox.hpp"
#include "loader/confirmed_runs.hpp"
#include "loader/held_runs.hpp"
#include "loader/loader_metrics.hpp"
#include "loader/stage_clock.hpp"
#include "store/claim_store.hpp"

namespace hourglass::loader {

class Recorder {
public:
    // What the recorder takes from, and tells; each outlives it.
    struct Neighbours {
        ConfirmedRuns& confirmed;
        HeldRuns& held;
        ClaimerDoorbell& claimer;
        LoaderMetrics& metrics;
    };

    Recorder(std::string owner, Neighbours neighbours, StageClock clock);

    // Records batches on a store from `open_store` until `stop` was asked and the publisher
    // closed the hand-off and every confirmed run is recorded (or waits for a locked row: its
    // claim stays with this instance's lease); reconnects after a failure. Then done().
    void run(std::stop_token stop, const store::OpenClaimStore& open_store, const store::StoreOptions& store_options);
    // Takes one batch (waiting for it as ConfirmedRuns says) and records it on `store`; false
    // once the last batch is recorded. A failed record puts the batch back and throws.
    bool record_batch(store::ClaimStore& store, std::stop_token stop);

    bool done() const noexcept { return done_.load(); }
    std::uint64_t runs_recorded() const noexcept { return recorded_total_.load(); }
    // Runs waiting for rows another transaction holds (read it on the recorder's own thread:
    // a test between record_batch() calls; /metrics has hourglass_handovers_waiting).
    std::size_t waiting_for_locked_rows() const noexcept { return locked_.size(); }

private:
    // Ends the runs of `handed_over` recorded (all but those `left`) in HeldRuns.
    void forget_recorded(const std::vector<HandedOverRun>& handed_over,
                         const std::vector<HandedOverRun>& left);

    const std::string owner_;
    Neighbours with_;
    StageClock clock_;
    std::vector<HandedOverRun> locked_;  // kept across reconnects
    LockedRowsRetry retry_;
    std::atomic<bool> done_{false};
    std::atomic<std::uint64_t> recorded_total_{0};
};

}  // namespace hourglass::loader
