// What the console's /api/ answers (reference §9), as JSON built from the store's rows
// (store::ConsoleStore), within the bounds below.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>

#include "hourglass/command.hpp"
#include "store/console_store.hpp"

namespace hourglass::console {

// Bounds of what one request reads.
inline constexpr std::int64_t kUpcomingCap = 25000;  // rows counted for one upcoming chart
inline constexpr std::size_t kLatenessSample = 1000;  // latest releases in the histogram
inline constexpr std::size_t kListLimit = 50;         // rejections, search results
inline constexpr std::size_t kCronLimit = 100;        // cron schedules
inline constexpr std::size_t kNextRuns = 3;           // next runs shown per cron schedule
inline constexpr std::size_t kBodyShownBytes = 4096;  // of a job's body
inline constexpr std::size_t kCancelPrefixCountCap = 100000;  // jobs counted before a cancel

class ConsoleData {
public:
    explicit ConsoleData(std::unique_ptr<store::ConsoleStore> store);

    // Running instances and their last heartbeat.
    nlohmann::json instances();
    // Jobs due per `width` for `slots` slots from `from`: pending jobs not yet claimed and
    // runs handed over but not yet released (see upcoming_view).
    nlohmann::json upcoming(TimePoint from, Milliseconds width, int slots);
    // Lateness of the latest releases (lateness_view).
    nlohmann::json lateness();
    // The latest rejections, newest first.
    nlohmann::json rejections();
    // Live recurring jobs, next due first, with their next few runs, then paused ones.
    nlohmann::json cron_schedules();
    // The jobs a cancel by `prefix` would cancel now, counted up to kCancelPrefixCountCap + 1.
    std::size_t count_cancellable_by_prefix(const std::string& prefix);
    // One job's row, or nothing.
    std::optional<nlohmann::json> job(const std::string& id);
    // Jobs whose routing key starts with `prefix` (valid UTF-8), in byte order.
    nlohmann::json search_routing_key(const std::string& prefix);
    // Applies a control command (cancel, pause, resume, cancel by prefix) as ingest would.
    CommandOutcome apply(Command command);

private:
    std::unique_ptr<store::ConsoleStore> store_;
};

}  // namespace hourglass::console
