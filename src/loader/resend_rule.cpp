#include "loader/resend_rule.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace hourglass::loader {

ResendRule::ResendRule(Milliseconds resend_after,
                       std::shared_ptr<const health::ServiceHealth> health)
    : resend_after_(resend_after), health_(std::move(health)) {}

std::optional<TimePoint> ResendRule::observing_since(TimePoint now) {
    using health::Component, health::Peer;
    const bool connected = health_->connected(Component::loader, Peer::rabbitmq) &&
                           health_->connected(Component::audit, Peer::rabbitmq) &&
                           health_->connected(Component::audit, Peer::postgresql);
    if (!connected) {
        connected_since_.reset();
        return std::nullopt;
    }
    if (!connected_since_) connected_since_ = now;
    const auto releasing = health_->releasing_since(now);
    // Said once per silence: it lasts as long as the alarm, and says why nothing is re-sent.
    if (!releasing && was_releasing_ && !said_not_releasing_) {
        spdlog::warn("loader: no release probe came back for {} s (a memory or disk alarm, a "
                     "stalled broker or audit): runs not yet released are not taken for lost "
                     "until the broker has released again for --resend-after",
                     health::kProbeSilence.count() / 1000);
        said_not_releasing_ = true;
    } else if (releasing && said_not_releasing_) {
        spdlog::info("loader: release probes come back again");
        said_not_releasing_ = false;
    }
    was_releasing_ = releasing.has_value();
    if (!releasing) return std::nullopt;
    return std::max(*connected_since_, *releasing);
}

std::optional<TimePoint> ResendRule::lost_if_due_before(TimePoint now) {
    const auto since = observing_since(now);
    if (!since || now - *since < resend_after_) return std::nullopt;
    // A run's copy may still wait in the audit queue behind the backlog the audit reports.
    return now - resend_after_ - health_->audit_behind();
}

}  // namespace hourglass::loader
