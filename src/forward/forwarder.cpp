#include "forward/forwarder.hpp"

#include "common/retry.hpp"
#include "forward/forward_channel.hpp"
#include "forward/forward_session.hpp"
#include "forward/forwarder_metrics.hpp"
#include "hourglass/command.hpp"

namespace hourglass::forward {

bool observed_with_another_run(const Message& forwarded) {
    return find_header(forwarded.properties, header::kObservedWith) != nullptr;
}

std::optional<TargetedRelease> targeted_release(const Message& forwarded) {
    const auto* value = find_header(forwarded.properties, header::kExchange);
    const auto* target = value ? std::get_if<std::string>(&value->value) : nullptr;
    if (target == nullptr || target->empty()) return std::nullopt;
    TargetedRelease release{*target, forwarded};
    release.message.exchange = *target;
    remove_header(release.message.properties, header::kExchange);
    remove_header(release.message.properties, header::kObservedWith);
    return release;
}

void run_forwarder(const ForwarderOptions& options, std::stop_token stop) {
    ForwarderMetrics metrics(options.metrics->registry());
    run_with_reconnect("forward", stop, [&] {
        auto channel = open_forward_channel(options.amqp, options.names.forward, options.prefetch);
        ForwardSession session(options, metrics, *channel);
        session.run(stop);
    });
}

}  // namespace hourglass::forward
