// The hand-off from the claimer to the publisher: the runs claimed and waiting for their
// publish instant, those published and awaiting a confirm, and the memory ledger that bounds
// both (with the room open offers of claims at insert reserve).
//
// Bounded: the claimer (and ingest's offers) take room only as room_for_claim() gives it, so
// schedule() never blocks nor drops. take_due() never blocks; wait_for_runs() is the
// publisher's one wait, woken by schedule(). Every method takes the board's own lock only:
// callers may hold theirs (the insert-claim desk does), never the other way round.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "loader/memory_ledger.hpp"
#include "loader/scheduled_run.hpp"

namespace hourglass::loader {

// Runs and bytes of bodies and properties a claim or an offer may take.
struct ClaimRoom {
    std::size_t runs = 0;
    std::size_t bytes = 0;
};

class ScheduleBoard {
public:
    explicit ScheduleBoard(MemoryBounds bounds) : ledger_(bounds) {}

    // --- the claimer ---
    ClaimRoom room_for_claim() const;
    // Whether a claim could take `runs` runs now (a backlog claims again once it can).
    bool has_room_for(std::size_t runs) const;
    // Holds `runs` for the publisher. `plan` runs first, under the board's lock, with the
    // ledger: it may take runs out (burst runs the burst bounds cannot hold) and counts the
    // burst runs it keeps. Returns the runs held now.
    using Plan = std::function<void(std::vector<ScheduledRun>&, MemoryLedger&)>;
    std::size_t schedule(std::vector<ScheduledRun> runs, const Plan& plan);
    // Forgets every run waiting for its instant, never published (another instance fenced this
    // one); returns their ids.
    std::vector<std::string> forget_scheduled();
    // At the end: the ids of the runs never published, and nothing held any more.
    std::vector<std::string> take_unpublished();

    // --- ingest's offers of claims at insert ---
    // Reserves up to `runs` and `bytes`, as much as a claim could take; nullopt when none.
    std::optional<ClaimRoom> reserve(std::size_t runs, std::size_t bytes);
    void end_reservation(ClaimRoom reserved);

    // --- the publisher ---
    struct Due {
        std::vector<ScheduledRun> runs;     // publish instant reached, within the window
        std::optional<TimePoint> next_publish;  // of the earliest run left waiting
        bool window_full = false;            // max_unconfirmed publishes await confirms
        std::size_t held = 0;                // runs held (waiting or in flight) after it
        std::size_t held_for_near_rung = 0;  // put back by `near_rung`
    };
    // Takes the runs whose publish instant is `now` or earlier, while fewer than
    // `max_unconfirmed` await confirms; they count as in flight until forget_published().
    // With `near_rung` (the broker is slow, HandoverPace), a run due later than that from now,
    // not a burst run, is put back until its due time minus `near_rung` instead, while the
    // ledger has room to hold runs longer (MemoryLedger::room_to_hold_longer).
    Due take_due(TimePoint now, std::size_t max_unconfirmed,
                 std::optional<Milliseconds> near_rung = std::nullopt);
    // Runs taken by take_due are settled: confirmed, or back to the store.
    void forget_published(const std::vector<const ScheduledRun*>& runs);
    // Waits up to `wait` for schedule() or a stop.
    void wait_for_runs(std::chrono::steady_clock::duration wait, std::stop_token stop);
    void interrupt();

    // Runs held: waiting for their instant or in flight.
    std::size_t held() const;

private:
    std::size_t held_locked() const noexcept { return schedule_.size() + in_flight_; }

    mutable std::mutex mutex_;
    std::condition_variable runs_added_;
    PublishSchedule schedule_;
    std::size_t in_flight_ = 0;  // published, not yet confirmed
    MemoryLedger ledger_;
    std::uint64_t generation_ = 0;  // bumped on every schedule(): the publisher re-plans
};

}  // namespace hourglass::loader
