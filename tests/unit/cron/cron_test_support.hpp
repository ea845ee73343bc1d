// Helpers for the cron unit tests: expressions, zones and instants from readable text, and runs
// printed as local time with the zone's abbreviation ("2026-03-29 03:00:00 CEST"), which says
// both the wall-clock time and which side of a DST change it is on.
#pragma once

#include <date/tz.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "hourglass/cron.hpp"

namespace hourglass::cron::test_support {

// Parses an expression the test expects to be valid.
inline CronExpression expression(std::string_view text) {
    auto parsed = parse(text);
    if (const auto* error = std::get_if<ParseError>(&parsed)) {
        throw std::invalid_argument("'" + std::string{text} + "' should parse: " + error->message);
    }
    return std::get<CronExpression>(parsed);
}

// The error message for an expression the test expects to be rejected.
inline std::string parse_error(std::string_view text) {
    auto parsed = parse(text);
    if (const auto* error = std::get_if<ParseError>(&parsed)) return error->message;
    throw std::invalid_argument("'" + std::string{text} + "' should be rejected");
}

// Values in a field, smallest first.
inline std::vector<int> values(ValueSet set) {
    std::vector<int> out;
    for (auto value = set.first_at_or_after(0); value; value = set.first_at_or_after(*value + 1)) {
        out.push_back(*value);
    }
    return out;
}

inline const date::time_zone& zone(std::string_view name) {
    const date::time_zone* found = find_zone(name);
    if (found == nullptr) throw std::invalid_argument("unknown zone " + std::string{name});
    return *found;
}

// "2026-03-29T01:00:00Z" or "2026-03-29T01:00:00.250Z".
inline TimePoint utc(std::string_view text) {
    int year = 0;
    unsigned month = 0;
    unsigned day = 0;
    int hour = 0;
    int minute = 0;
    int second = 0;
    int millisecond = 0;
    char zulu = 0;
    const std::string copy{text};
    const bool whole = std::sscanf(copy.c_str(), "%d-%u-%uT%d:%d:%d%c", &year, &month, &day, &hour,
                                   &minute, &second, &zulu) == 7 &&
                       zulu == 'Z';
    const bool fraction = std::sscanf(copy.c_str(), "%d-%u-%uT%d:%d:%d.%3d%c", &year, &month, &day,
                                      &hour, &minute, &second, &millisecond, &zulu) == 8 &&
                          zulu == 'Z';
    const date::year_month_day date{date::year{year}, date::month{month}, date::day{day}};
    if ((!whole && !fraction) || !date.ok()) {
        throw std::invalid_argument("bad UTC time " + copy);
    }
    return date::sys_days{date} + std::chrono::hours{hour} + std::chrono::minutes{minute} +
           std::chrono::seconds{second} + std::chrono::milliseconds{millisecond};
}

// "2026-03-29 03:00:00 CEST": local wall-clock time in `zone`, whole seconds.
inline std::string local_text(TimePoint instant, const date::time_zone& zone) {
    const auto seconds = std::chrono::floor<std::chrono::seconds>(instant);
    const date::sys_info info = zone.get_info(seconds);
    const date::local_seconds local{seconds.time_since_epoch() + info.offset};
    return date::format("%F %T ", local) + info.abbrev;
}

// The first `count` runs after `start_utc`, as local_text; stops early if there are no more.
inline std::vector<std::string> runs_after(std::string_view cron, std::string_view zone_name,
                                           std::string_view start_utc, std::size_t count) {
    const CronExpression parsed = expression(cron);
    const date::time_zone& in_zone = zone(zone_name);
    std::vector<std::string> runs;
    TimePoint after = utc(start_utc);
    while (runs.size() < count) {
        const auto next = next_occurrence(parsed, in_zone, after);
        if (!next) break;
        runs.push_back(local_text(*next, in_zone));
        after = *next;
    }
    return runs;
}

}  // namespace hourglass::cron::test_support
