#include "loader/insert_claim_desk.hpp"

#include <algorithm>
#include <iterator>

namespace hourglass::loader {

std::optional<InsertClaimOffer> InsertClaimDesk::offer(InsertClaimOffer offer, std::size_t runs,
                                                       std::size_t bytes) {
    if (runs == 0 || bytes == 0) return std::nullopt;
    std::lock_guard lock(mutex_);
    if (!open_) return std::nullopt;
    const auto reserved = board_.reserve(runs, bytes);
    if (!reserved) return std::nullopt;
    offer.runs = reserved->runs;
    offer.bytes = reserved->bytes;
    offer.epoch = epoch_;
    ++open_offers_;
    open_since_.insert(offer.made_at);
    return offer;
}

void InsertClaimDesk::adopt(const InsertClaimOffer& offer, std::vector<ClaimedRun> runs) {
    const ClaimRoom reserved{.runs = offer.runs, .bytes = offer.bytes};
    {
        std::lock_guard lock(mutex_);
        open_offers_ -= std::min<std::size_t>(open_offers_, 1);
        if (const auto it = open_since_.find(offer.made_at); it != open_since_.end()) open_since_.erase(it);
        if (runs.empty()) {
            board_.end_reservation(reserved);
        } else {
            adopted_.push_back({.epoch = offer.epoch, .reserved = reserved, .runs = std::move(runs)});
        }
    }
    offers_ended_.notify_all();
}

void InsertClaimDesk::set_open(bool open) {
    std::lock_guard lock(mutex_);
    open_ = open;
}

InsertClaimDesk::Adopted InsertClaimDesk::take(bool stopping, std::vector<std::string>& give_back) {
    Adopted taken;
    std::lock_guard lock(mutex_);
    for (auto& offer : std::exchange(adopted_, {})) {
        if (offer.epoch == epoch_ && !stopping) {
            taken.reserved.runs += offer.reserved.runs;
            taken.reserved.bytes += offer.reserved.bytes;
            std::move(offer.runs.begin(), offer.runs.end(), std::back_inserter(taken.runs));
            continue;
        }
        // Leased before the loader forgot its claims (others may have taken them over), or
        // while it stops: given back for any instance to claim.
        for (const auto& run : offer.runs) give_back.push_back(run.id);
        board_.end_reservation(offer.reserved);
    }
    return taken;
}

void InsertClaimDesk::forget_claims() {
    std::lock_guard lock(mutex_);
    ++epoch_;
}

void InsertClaimDesk::close(std::chrono::steady_clock::duration wait) {
    std::unique_lock lock(mutex_);
    open_ = false;
    // An ingest transaction lasts milliseconds; one that hangs longer leaves its runs leased
    // to this instance, taken over once the lease ends.
    offers_ended_.wait_for(lock, wait, [&] { return open_offers_ == 0; });
}

std::optional<TimePoint> InsertClaimDesk::oldest_open_offer() const {
    std::lock_guard lock(mutex_);
    if (open_since_.empty()) return std::nullopt;
    return *open_since_.begin();
}

std::vector<std::string> InsertClaimDesk::take_all_ids() {
    std::lock_guard lock(mutex_);
    std::vector<std::string> ids;
    for (const auto& offer : std::exchange(adopted_, {})) {
        for (const auto& run : offer.runs) ids.push_back(run.id);
    }
    return ids;
}

}  // namespace hourglass::loader
