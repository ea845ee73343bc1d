// What a consumer's channel owes its queue, for the fake channels of unit tests (ingest's
// commands, the audit's release copies): delivery tags count from 1, an ack settles one
// delivery or every one up to its tag, and what was not acked goes back to the front of the
// queue, in order, when the channel closes (as the broker requeues on a lost connection). The
// caller holds its fake world's lock around every call.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "amqp/connection.hpp"
#include "hourglass/message.hpp"

namespace hourglass::testing {

template <typename Queue>
class FakeDeliveries {
public:
    explicit FakeDeliveries(Queue& queue) : queue_(queue) {}

    amqp::Delivery deliver(Message message) {
        amqp::Delivery delivery;
        delivery.delivery_tag = ++last_tag_;
        delivery.message = std::move(message);
        unacked_.emplace_back(delivery.delivery_tag, delivery.message);
        return delivery;
    }
    void ack(std::uint64_t delivery_tag, bool multiple) {
        std::erase_if(unacked_, [&](const auto& entry) {
            return multiple ? entry.first <= delivery_tag : entry.first == delivery_tag;
        });
    }
    // The channel closes: what was not acked goes back, in order.
    void requeue() {
        for (auto it = unacked_.rbegin(); it != unacked_.rend(); ++it) queue_.emplace_front(std::move(it->second));
        unacked_.clear();
    }

private:
    Queue& queue_;
    std::uint64_t last_tag_ = 0;
    std::vector<std::pair<std::uint64_t, Message>> unacked_;
};

}  // namespace hourglass::testing
