// How to ack the deliveries a consumer has settled while earlier ones still wait unacked (a
// command or a release copy whose row another PostgreSQL transaction holds). An ack "through"
// a tag (multiple) would ack the waiting ones too: the settled deliveries below the first
// waiting one take one such ack, those after it are acked one by one.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace hourglass::amqp {

struct AckPlan {
    std::optional<std::uint64_t> through;  // ack with multiple, if set
    std::vector<std::uint64_t> one_by_one;
};

// `settled`: delivery tags in any order; `first_waiting`: the lowest tag still waiting (none:
// everything settled takes one ack through its highest tag).
inline AckPlan plan_acks(const std::vector<std::uint64_t>& settled,
                         std::optional<std::uint64_t> first_waiting) {
    AckPlan plan;
    // Delivery tags count from 1: no tag reaches the largest value.
    const auto waiting_from = first_waiting.value_or(std::numeric_limits<std::uint64_t>::max());
    for (const auto tag : settled) {
        if (tag < waiting_from) {
            if (!plan.through || tag > *plan.through) plan.through = tag;
        } else {
            plan.one_by_one.push_back(tag);
        }
    }
    return plan;
}

}  // namespace hourglass::amqp
