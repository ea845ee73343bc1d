// The hand-off between ingest and the claimer for claims at insert (reference §6.2): the room
// the loader offers ingest, reserved on the schedule board until the runs leased under an offer
// are scheduled, and those runs, for the claimer to schedule with its next claim.
//
// Bounded: an offer reserves its room on the board (ScheduleBoard::reserve), so adopt() never
// blocks nor drops. Takes the board's lock under its own, never the other way round.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "hourglass/job.hpp"
#include "loader/schedule_board.hpp"

namespace hourglass::loader {

class InsertClaimDesk {
public:
    explicit InsertClaimDesk(ScheduleBoard& board) : board_(board) {}

    // The runs ingest leased under offers of the current epoch, with the room those offers
    // reserved (the claimer ends the reservation once it scheduled them).
    struct Adopted {
        ClaimRoom reserved;
        std::vector<ClaimedRun> runs;
    };

    // --- ingest ---
    // An offer shaped as `offer` (owner, lease, horizon end) for up to `runs` and `bytes`, as
    // much as the board has room for; nullopt while the desk is closed or there is no room.
    std::optional<InsertClaimOffer> offer(InsertClaimOffer offer, std::size_t runs, std::size_t bytes);
    // Ends `offer`: its runs (none if ingest's transaction failed) wait for the claimer.
    void adopt(const InsertClaimOffer& offer, std::vector<ClaimedRun> runs);

    // --- the claimer ---
    // Whether offers are made: only when no claim would take those runs first.
    void set_open(bool open);
    // Takes the runs adopted under the current epoch (none when `stopping`); the ids of the
    // others go to `give_back`, and their reservations end.
    Adopted take(bool stopping, std::vector<std::string>& give_back);
    // The loader forgot its claims: runs leased under offers made before are given back.
    void forget_claims();
    // Closes the desk and waits up to `wait` until ingest ended every offer it took, so that no
    // insert leases a run to this loader after it gave back its claims.
    void close(std::chrono::steady_clock::duration wait);
    // At the end: the ids of every run adopted and not yet taken.
    std::vector<std::string> take_all_ids();

    // --- the heartbeat's reconciliation ---
    // When the oldest offer ingest has not ended yet was made: the runs leased under it may be
    // committed and not yet adopted, so no lease younger than it is an orphan.
    std::optional<TimePoint> oldest_open_offer() const;

private:
    struct AdoptedOffer {
        std::uint64_t epoch = 0;
        ClaimRoom reserved;
        std::vector<ClaimedRun> runs;
    };

    ScheduleBoard& board_;
    mutable std::mutex mutex_;
    std::condition_variable offers_ended_;
    bool open_ = false;
    std::size_t open_offers_ = 0;
    std::multiset<TimePoint> open_since_;  // made_at of each offer not yet ended
    std::vector<AdoptedOffer> adopted_;
    std::uint64_t epoch_ = 0;
};

}  // namespace hourglass::loader
