// The ingest's series (/metrics): commands taken from <prefix>.in and each one's outcome once
// acked, rejections by the field at fault.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "hourglass/command.hpp"
#include "common/metrics.hpp"

namespace hourglass::ingest {

// The short, stable code a rejection is counted under (label `reason`), derived from the field
// its error names ("x-delay: -5 (i32) is negative" -> "x-delay"). One of rejection_reasons();
// errors naming nothing known count as "other", so the label never grows beyond that list.
std::string_view rejection_reason(std::string_view error) noexcept;
const std::vector<std::string_view>& rejection_reasons();

class IngestMetrics {
public:
    // Registers the series in `registry`, once per service.
    explicit IngestMetrics(metrics::Registry& registry);

    // Deliveries taken from <prefix>.in, redeliveries included.
    void count_received(std::size_t commands) noexcept { received_.increment(commands); }
    // Each command's outcome, once acked.
    void count_outcomes(const std::vector<CommandOutcome>& outcomes) noexcept;
    // Commands held unacked because another transaction keeps their job's row locked.
    void set_waiting(std::size_t commands) noexcept { waiting_.set(static_cast<double>(commands)); }

  private:
    static constexpr std::size_t kStatusCount = 9;

    metrics::Counter& received_;
    metrics::Gauge& waiting_;
    std::array<metrics::Counter*, kStatusCount> by_status_{};
    std::vector<std::pair<std::string_view, metrics::Counter*>> rejected_by_reason_;
};

}  // namespace hourglass::ingest
