// The forwarder's series (/metrics): released runs with a target exchange, published to it or
// to <prefix>.unroutable.
#pragma once

#include <cstddef>

#include "common/metrics.hpp"

namespace hourglass::forward {

class ForwarderMetrics {
public:
    // Registers the series in `registry`, once per service.
    explicit ForwarderMetrics(metrics::Registry& registry);

    void count_forwarded(std::size_t releases) noexcept { forwarded_.increment(releases); }
    // Could not be routed by their target, or the target was gone.
    void count_unroutable(std::size_t releases) noexcept { unroutable_.increment(releases); }

private:
    metrics::Counter& forwarded_;
    metrics::Counter& unroutable_;
};

}  // namespace hourglass::forward
