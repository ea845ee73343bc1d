// Time zone lookup for `x-cron-tz` (reference §3.1): a name from the system tz database, or none.
#include <date/tz.h>

#include <chrono>
#include <exception>

#include "hourglass/cron.hpp"

namespace hourglass::cron {
namespace {

// The longest IANA name is about 30 characters; anything much longer is not a zone name.
constexpr std::size_t max_zone_name_length = 128;

}  // namespace

const date::time_zone* find_zone(std::string_view name) noexcept {
    if (name.empty() || name.size() > max_zone_name_length) return nullptr;
    try {
        const date::time_zone* zone = date::locate_zone(name);
        // date reads a zone's file on first use; do it here, so that later lookups do not throw.
        (void)zone->get_info(std::chrono::sys_seconds{});
        return zone;
    } catch (const std::exception&) {
        return nullptr;  // unknown name, unreadable tz database, or out of memory
    }
}

}  // namespace hourglass::cron
