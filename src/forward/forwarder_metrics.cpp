#include "forward/forwarder_metrics.hpp"

namespace hourglass::forward {

ForwarderMetrics::ForwarderMetrics(metrics::Registry& registry)
    : forwarded_(registry.add_counter(
          "hourglass_releases_forwarded_total",
          "Released runs with a target exchange (x-hourglass-exchange) published to it and "
          "confirmed.")),
      unroutable_(registry.add_counter(
          "hourglass_releases_forwarded_unroutable_total",
          "Released runs with a target exchange that could not route them or no longer existed, "
          "published to <prefix>.unroutable instead.")) {}

}  // namespace hourglass::forward
