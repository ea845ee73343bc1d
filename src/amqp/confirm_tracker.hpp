// ConfirmTracker: the publisher-confirm bookkeeping of one confirm channel, shared by ingest,
// the loader and the forwarder.
//
// Each publish is recorded with its sequence number and what the caller needs to finish it
// (a run, a delivery tag, ...). settle() takes the broker's basic.ack / basic.nack, which may
// cover several publishes (`multiple`) and may arrive out of order, and returns exactly the
// publishes it settles, each once. A basic.return (mandatory publish the broker could not
// route) arrives before the confirm of that publish: mark_returned() flags the oldest matching
// unsettled publish, and the flag travels with it when it is settled. When the channel or the
// connection is lost, take_unsettled() hands back everything still open: those publishes may or
// may not have reached the broker.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <vector>

#include "amqp/connection.hpp"

namespace hourglass::amqp {

template <typename T>
class ConfirmTracker {
public:
    struct Settled {
        std::uint64_t sequence = 0;
        T value;
        bool ack = true;        // false: the broker refused it (basic.nack)
        bool returned = false;  // the broker returned it as unroutable before confirming
    };

    // Records the publish that Connection::publish numbered `sequence` on a confirm channel.
    void published(std::uint64_t sequence, T value) {
        open_.insert_or_assign(sequence, Entry{std::move(value), false});
    }

    // The publishes this confirm settles, in publish order; empty for a confirm of nothing open
    // (a repeated or stale confirm).
    std::vector<Settled> settle(const Confirm& confirm) {
        const auto first = confirm.multiple ? open_.begin() : open_.find(confirm.delivery_tag);
        const auto last = confirm.multiple ? open_.upper_bound(confirm.delivery_tag)
                          : first == open_.end() ? first
                                                 : std::next(first);
        std::vector<Settled> settled;
        for (auto it = first; it != last; ++it) {
            settled.push_back({it->first, std::move(it->second.value), confirm.ack,
                               it->second.returned});
        }
        open_.erase(first, last);
        return settled;
    }

    // Flags the oldest open, not yet returned publish whose value satisfies `matches`; false if
    // there is none.
    template <typename Predicate>
    bool mark_returned(Predicate&& matches) {
        for (auto& [sequence, entry] : open_) {
            if (!entry.returned && matches(entry.value)) {
                entry.returned = true;
                return true;
            }
        }
        return false;
    }

    // Everything still open, in publish order; the tracker is empty afterwards (a new channel
    // numbers its publishes from 1 again).
    std::vector<Settled> take_unsettled() {
        std::vector<Settled> open;
        for (auto& [sequence, entry] : open_) {
            open.push_back({sequence, std::move(entry.value), false, entry.returned});
        }
        open_.clear();
        return open;
    }

    // The oldest publish still open (the lowest sequence); null when none is.
    const T* oldest() const noexcept { return open_.empty() ? nullptr : &open_.begin()->second.value; }
    bool empty() const noexcept { return open_.empty(); }
    std::size_t size() const noexcept { return open_.size(); }
    // Whether `sequence` is still open.
    bool contains(std::uint64_t sequence) const { return open_.count(sequence) > 0; }

private:
    struct Entry {
        T value;
        bool returned = false;
    };
    std::map<std::uint64_t, Entry> open_;
};

}  // namespace hourglass::amqp
