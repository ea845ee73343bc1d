// libFuzzer target for the cron parser and next-occurrence search: whatever the input, they
// must not crash, hang or break their contracts (runs are whole seconds, strictly after the
// given instant, and an expression that can fire always has a next run in ordinary years).
//
// Input layout: 8 bytes of start instant, 1 byte choosing the zone, the rest is the expression.
// Shorter inputs are only parsed, and also looked up as zone names. Build with fuzz/build.sh.
#include <date/tz.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <variant>

#include "hourglass/cron.hpp"

namespace {

using hourglass::TimePoint;
namespace cron = hourglass::cron;

// Zones with gaps and repeated hours of one hour, 30 minutes, and a whole skipped day.
constexpr std::array<const char*, 6> zone_names{
    "UTC",          "Europe/Berlin",    "America/New_York", "Australia/Lord_Howe",
    "Pacific/Apia", "America/Sao_Paulo"};

const date::time_zone& zone_for(std::uint8_t choice) {
    static const auto zones = [] {
        std::array<const date::time_zone*, zone_names.size()> found{};
        for (std::size_t i = 0; i < zone_names.size(); ++i) {
            found[i] = cron::find_zone(zone_names[i]);
            if (found[i] == nullptr) __builtin_trap();
        }
        return found;
    }();
    return *zones[choice % zones.size()];
}

// Mostly 1970-2100, where every expression that can fire must be found; sometimes anything,
// to exercise the range checks.
TimePoint start_instant(std::uint64_t raw) {
    constexpr std::int64_t span_ms = std::int64_t{130} * 366 * 24 * 3600 * 1000;
    if ((raw & 0xff) == 0xff) {
        return TimePoint{std::chrono::milliseconds{static_cast<std::int64_t>(raw)}};
    }
    return TimePoint{std::chrono::milliseconds{static_cast<std::int64_t>(raw % span_ms)}};
}

bool in_ordinary_years(TimePoint instant) {
    return instant >= date::sys_days{date::year{1970} / 1 / 1} &&
           instant < date::sys_days{date::year{2200} / 1 / 1};
}

void check_runs(const cron::CronExpression& expression, const date::time_zone& zone,
                TimePoint after) {
    const bool can_fire = cron::can_ever_fire(expression);
    for (int run = 0; run < 4; ++run) {
        const auto next = cron::next_occurrence(expression, zone, after);
        if (!next) {
            if (can_fire && in_ordinary_years(after)) __builtin_trap();  // a run was lost
            return;
        }
        if (!can_fire || *next <= after) __builtin_trap();
        if (next->time_since_epoch() % std::chrono::seconds{1} != std::chrono::milliseconds{0}) {
            __builtin_trap();
        }
        if (cron::fires_between(expression, zone, after, *next - std::chrono::milliseconds{1})) {
            __builtin_trap();  // something earlier than the "next" run
        }
        after = *next;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    constexpr std::size_t header_size = sizeof(std::uint64_t) + 1;
    if (size < header_size) {
        const std::string_view text{reinterpret_cast<const char*>(data), size};
        (void)cron::parse(text);
        (void)cron::find_zone(text);
        return 0;
    }
    std::uint64_t raw_start = 0;
    std::memcpy(&raw_start, data, sizeof raw_start);
    const std::uint8_t zone_choice = data[sizeof raw_start];
    const std::string_view text{reinterpret_cast<const char*>(data + header_size),
                                size - header_size};

    auto parsed = cron::parse(text);
    if (const auto* expression = std::get_if<cron::CronExpression>(&parsed)) {
        check_runs(*expression, zone_for(zone_choice), start_instant(raw_start));
    } else if (std::get<cron::ParseError>(parsed).message.empty()) {
        __builtin_trap();  // every rejection must say why
    }
    return 0;
}
