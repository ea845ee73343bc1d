// When a cron expression fires (reference §5).
//
// The search walks the zone's periods of constant UTC offset (date::sys_info) in time order.
// Inside one period local time is UTC shifted by a constant, so the first run in it is the first
// matching local time in the period's local window, found day by day. Between two periods it
// applies the DST rules: a forward jump (gap) turns every matching local time it skips into one
// run at the jump; after a backward jump the repeated local times run again only if the hour
// field starts with `*`.
#include <date/tz.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>

#include "hourglass/cron.hpp"

namespace hourglass::cron {
namespace {

using date::local_days;
using date::local_seconds;
using date::sys_days;
using date::sys_seconds;
using date::year_month_day;
using std::chrono::seconds;

// Any expression that can fire at all fires within 40 years (29 February on a given weekday is
// the rarest date), so a search that finds nothing in 50 years can stop.
constexpr auto search_horizon = std::chrono::duration_cast<seconds>(date::years{50});
// Calendar arithmetic stays inside four-digit years.
constexpr sys_seconds earliest_after{sys_days{date::year{1} / 1 / 1}};
constexpr sys_seconds latest_run{sys_days{date::year{10000} / 1 / 1}};

// Bits a well-formed field may have, from its smallest to its largest value.
constexpr std::uint64_t bits_from_to(int first, int last) {
    return ((std::uint64_t{1} << (last + 1)) - 1) & ~((std::uint64_t{1} << first) - 1);
}

bool is_well_formed(const CronExpression& expr) {
    const auto fits = [](ValueSet set, std::uint64_t allowed) {
        return set.bits != 0 && (set.bits & ~allowed) == 0;
    };
    return fits(expr.seconds, bits_from_to(0, 59)) && fits(expr.minutes, bits_from_to(0, 59)) &&
           fits(expr.hours, bits_from_to(0, 23)) && fits(expr.days_of_month, bits_from_to(1, 31)) &&
           fits(expr.months, bits_from_to(1, 12)) && fits(expr.days_of_week, bits_from_to(0, 6));
}

int to_int(date::month month) {
    return static_cast<int>(static_cast<unsigned>(month));
}
int to_int(date::day day) {
    return static_cast<int>(static_cast<unsigned>(day));
}

local_seconds to_local(sys_seconds instant, seconds offset) {
    return local_seconds{instant.time_since_epoch() + offset};
}
sys_seconds to_sys(local_seconds local, seconds offset) {
    return sys_seconds{local.time_since_epoch() - offset};
}

bool day_matches(const CronExpression& expr, const year_month_day& ymd, date::weekday weekday) {
    const bool day_of_month_matches = expr.days_of_month.contains(to_int(ymd.day()));
    const bool day_of_week_matches =
        expr.days_of_week.contains(static_cast<int>(weekday.c_encoding()));
    if (expr.day_of_month_restricted && expr.day_of_week_restricted) {
        return day_of_month_matches || day_of_week_matches;
    }
    return day_of_month_matches && day_of_week_matches;
}

local_days first_day_of_next_allowed_month(const CronExpression& expr, const year_month_day& ymd) {
    if (const auto month = expr.months.first_at_or_after(to_int(ymd.month()) + 1)) {
        return local_days{ymd.year() / date::month(static_cast<unsigned>(*month)) / 1};
    }
    const auto first_month = static_cast<unsigned>(*expr.months.first_at_or_after(1));
    return local_days{(ymd.year() + date::years{1}) / date::month{first_month} / 1};
}

// The earliest matching time of day at or after `time_of_day`, if the day has one left.
std::optional<seconds> first_time_at_or_after(const CronExpression& expr, seconds time_of_day) {
    const date::hh_mm_ss<seconds> start{time_of_day};
    const auto start_hour = static_cast<int>(start.hours().count());
    const auto start_minute = static_cast<int>(start.minutes().count());
    const auto start_second = static_cast<int>(start.seconds().count());
    for (auto hour = expr.hours.first_at_or_after(start_hour); hour;
         hour = expr.hours.first_at_or_after(*hour + 1)) {
        const bool in_start_hour = *hour == start_hour;
        for (auto minute = expr.minutes.first_at_or_after(in_start_hour ? start_minute : 0); minute;
             minute = expr.minutes.first_at_or_after(*minute + 1)) {
            const bool in_start_minute = in_start_hour && *minute == start_minute;
            if (const auto second =
                    expr.seconds.first_at_or_after(in_start_minute ? start_second : 0)) {
                return std::chrono::hours{*hour} + std::chrono::minutes{*minute} + seconds{*second};
            }
        }
    }
    return std::nullopt;
}

// The first local time in [from, until) that the expression matches, ignoring time zones.
std::optional<local_seconds> first_match_in(const CronExpression& expr, local_seconds from,
                                            local_seconds until) {
    local_days day = std::chrono::floor<date::days>(from);
    seconds time_of_day = from - day;
    while (day < until) {
        const year_month_day ymd{day};
        if (!expr.months.contains(to_int(ymd.month()))) {
            day = first_day_of_next_allowed_month(expr, ymd);
            time_of_day = seconds{0};
            continue;
        }
        if (day_matches(expr, ymd, date::weekday{day})) {
            if (const auto time = first_time_at_or_after(expr, time_of_day)) {
                const local_seconds candidate = day + *time;
                if (candidate < until) return candidate;
                return std::nullopt;
            }
        }
        day += date::days{1};
        time_of_day = seconds{0};
    }
    return std::nullopt;
}

// Whether a forward jump of the UTC offset at `jump` skips local times that the expression
// matches; if so they give one run, at `jump` (the first instant after the gap).
bool skipped_times_match(const CronExpression& expr, sys_seconds jump, seconds offset_before,
                         seconds offset_after) {
    return offset_after > offset_before &&
           first_match_in(expr, to_local(jump, offset_before), to_local(jump, offset_after));
}

TimePoint to_time_point(sys_seconds instant) {
    return std::chrono::time_point_cast<Milliseconds>(instant);
}

}  // namespace

bool can_ever_fire(const CronExpression& expr) noexcept {
    if (!is_well_formed(expr)) return false;
    // Every weekday occurs in every month.
    if (expr.day_of_month_restricted && expr.day_of_week_restricted) return true;
    // Otherwise both day fields must match: every (month, day) pair that exists at all falls on
    // every weekday in some year, so the question is only whether such a pair is allowed.
    for (int month = 1; month <= 12; ++month) {
        if (!expr.months.contains(month)) continue;
        // 2000 is a leap year, so February counts its 29th.
        const auto month_end =
            date::year{2000} / date::month(static_cast<unsigned>(month)) / date::last;
        if (*expr.days_of_month.first_at_or_after(1) <= to_int(month_end.day())) return true;
    }
    return false;
}

std::optional<TimePoint> next_occurrence(const CronExpression& expr, const date::time_zone& zone,
                                         TimePoint after) {
    if (!can_ever_fire(expr) || after < earliest_after || after >= latest_run) return std::nullopt;
    sys_seconds from = std::chrono::floor<seconds>(after) + seconds{1};
    const sys_seconds horizon = std::min(from + search_horizon, latest_run);

    date::sys_info period = zone.get_info(from);
    // The offset before `period`: needed to skip the second pass of repeated local times, and
    // when `from` is exactly at a forward jump.
    std::optional<seconds> offset_before;
    if ((!expr.hour_starts_with_star || period.begin == from) && period.begin > earliest_after) {
        offset_before = zone.get_info(period.begin - seconds{1}).offset;
    }
    if (period.begin == from && offset_before &&
        skipped_times_match(expr, from, *offset_before, period.offset)) {
        return to_time_point(from);
    }
    while (true) {
        const sys_seconds period_end = std::min(period.end, horizon);
        local_seconds search_from = to_local(from, period.offset);
        if (!expr.hour_starts_with_star && offset_before && *offset_before > period.offset) {
            // The period opens by repeating local times that already ran in the one before.
            search_from = std::max(search_from, to_local(period.begin, *offset_before));
        }
        if (const auto match =
                first_match_in(expr, search_from, to_local(period_end, period.offset))) {
            return to_time_point(to_sys(*match, period.offset));
        }
        if (period_end >= horizon) return std::nullopt;

        date::sys_info next = zone.get_info(period.end);
        if (skipped_times_match(expr, period.end, period.offset, next.offset)) {
            return to_time_point(period.end);
        }

        offset_before = period.offset;
        from = period.end;
        period = std::move(next);
    }
}

bool fires_between(const CronExpression& expression, const date::time_zone& zone, TimePoint after,
                   TimePoint until) {
    const auto next = next_occurrence(expression, zone, after);
    return next && *next <= until;
}

}  // namespace hourglass::cron
