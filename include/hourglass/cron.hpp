// Cron expressions (reference §5): parsing, and the instants at which an expression fires in an
// IANA time zone.
//
// parse() turns user text into a CronExpression, or a ParseError whose message names the field
// and the bad token; it never throws on user input (only std::bad_alloc can escape). Syntax:
// five fields `minute hour day-of-month month day-of-week`, or six with seconds first; `*`,
// lists, ranges, steps (`*/5`, `10-40/7`, and `a/n` = `a-max/n`), month and weekday names,
// 0 or 7 = Sunday, and the macros @yearly @annually @monthly @weekly @daily @midnight @hourly;
// names and macros are case-insensitive, ranges must not wrap.
//
// next_occurrence() returns the first run strictly after an instant. Runs are at whole seconds
// of local time in the given zone, with the Vixie rule for day-of-month/day-of-week and the
// DST rule of reference §5: matching local times inside a spring-forward gap give one run, at the
// first instant after the gap; in a repeated (fall-back) hour an expression whose hour field starts
// with `*` runs in both passes, any other only in the first. The search is bounded (it never
// looks more than 50 years ahead; any expression that can_ever_fire() fires within 40), and
// it is safe to call from several threads.
//
// Time zones come from the system tz database through libhowardhinnant-date. Its reader uses
// the transitions stored in the zone files, which end in 2037: after the last stored
// transition a zone keeps its last offset (no further DST changes).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "hourglass/time.hpp"

namespace date {
class time_zone;
}

namespace hourglass::cron {

// The values one field allows: bit v set = value v allowed.
struct ValueSet {
    std::uint64_t bits = 0;

    constexpr bool contains(int value) const noexcept {
        return value >= 0 && value < 64 && ((bits >> value) & 1U) != 0;
    }
    // The smallest allowed value that is >= `from`, if any.
    constexpr std::optional<int> first_at_or_after(int from) const noexcept {
        from = std::max(from, 0);
        if (from >= 64 || (bits >> from) == 0) return std::nullopt;
        return from + std::countr_zero(bits >> from);
    }

    friend bool operator==(const ValueSet&, const ValueSet&) = default;
};

struct CronExpression {
    ValueSet seconds;        // 0-59; {0} when the expression has five fields
    ValueSet minutes;        // 0-59
    ValueSet hours;          // 0-23
    ValueSet days_of_month;  // 1-31
    ValueSet months;         // 1-12
    ValueSet days_of_week;   // 0-6, 0 = Sunday (a written 7 is stored as 0)
    bool has_seconds = false;
    // A day field is restricted unless its text starts with `*`. When both are restricted a
    // day matches if either field matches, otherwise only if both do (Vixie cron).
    bool day_of_month_restricted = false;
    bool day_of_week_restricted = false;
    // Decides whether the expression also runs in the second pass of a repeated hour.
    bool hour_starts_with_star = false;

    friend bool operator==(const CronExpression&, const CronExpression&) = default;
};

struct ParseError {
    // e.g. "day-of-week: bad token 'FRI-MON' (ranges must not wrap)"
    std::string message;
};

// Longer input is rejected before it is looked at.
inline constexpr std::size_t max_expression_length = 256;

std::variant<CronExpression, ParseError> parse(std::string_view text);

// False when no calendar date can ever match (`0 0 30 2 *`, `0 0 31 4,6 *`); schedules with
// such expressions are rejected (reference §3.1).
bool can_ever_fire(const CronExpression& expression) noexcept;

// The first run strictly after `after`, or nothing if there is none within 50 years, none
// before the year 10000, or `after` is before the year 1. `zone` should come from find_zone()
// (which has already loaded it, so this does not throw).
std::optional<TimePoint> next_occurrence(const CronExpression& expression,
                                         const date::time_zone& zone, TimePoint after);

// Whether some run r satisfies after < r <= until: false means the schedule would never fire
// before its `x-cron-until` (reference §3.1).
bool fires_between(const CronExpression& expression, const date::time_zone& zone, TimePoint after,
                   TimePoint until);

// The IANA zone with this exact name (`Europe/Berlin`, `UTC`), loaded and ready to use, or
// nullptr if the system tz database does not know it.
const date::time_zone* find_zone(std::string_view name) noexcept;

}  // namespace hourglass::cron
