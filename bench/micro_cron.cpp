// Micro-benchmarks of cron parsing and next-occurrence search (issue 6 targets < 5 µs per
// next_occurrence call for typical expressions).
//
// next_occurrence is measured from 1024 start instants spread over 2026 (fixed seed), cycled
// through, so that the figure is an average over positions in the day, month and year and over
// both sides of DST changes, not the cost of one lucky instant.
#include <benchmark/benchmark.h>
#include <date/tz.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "hourglass/cron.hpp"

namespace {

using hourglass::TimePoint;
namespace cron = hourglass::cron;

cron::CronExpression parsed(const char* text) {
    auto result = cron::parse(text);
    if (auto* error = std::get_if<cron::ParseError>(&result))
        throw std::runtime_error(error->message);
    return std::get<cron::CronExpression>(result);
}

const std::vector<TimePoint>& starts_in_2026() {
    static const std::vector<TimePoint> starts = [] {
        const TimePoint first = date::sys_days{date::year{2026} / 1 / 1};
        const std::int64_t year_ms = std::chrono::milliseconds{date::days{365}}.count();
        std::mt19937_64 random{2026};
        std::vector<TimePoint> out(1024);
        for (TimePoint& start : out) {
            start = first + std::chrono::milliseconds{static_cast<std::int64_t>(
                                random() % static_cast<std::uint64_t>(year_ms))};
        }
        return out;
    }();
    return starts;
}

void parse_expression(benchmark::State& state, const char* text) {
    for (auto _ : state) {
        auto result = cron::parse(text);
        benchmark::DoNotOptimize(result);
    }
}

void next_occurrence(benchmark::State& state, const char* text, const char* zone_name) {
    const cron::CronExpression expression = parsed(text);
    const date::time_zone* zone = cron::find_zone(zone_name);
    if (zone == nullptr) throw std::runtime_error(std::string{"unknown zone "} + zone_name);
    const auto& starts = starts_in_2026();
    std::size_t next_start = 0;
    for (auto _ : state) {
        auto next = cron::next_occurrence(expression, *zone, starts[next_start]);
        benchmark::DoNotOptimize(next);
        next_start = (next_start + 1) % starts.size();
    }
}

}  // namespace

BENCHMARK_CAPTURE(parse_expression, every_5_minutes, "*/5 * * * *");
BENCHMARK_CAPTURE(parse_expression, weekdays_at_9, "0 9 * * MON-FRI");
BENCHMARK_CAPTURE(parse_expression, monthly, "0 0 1 * *");
BENCHMARK_CAPTURE(parse_expression, macro_daily, "@daily");
BENCHMARK_CAPTURE(parse_expression, six_fields_with_lists,
                  "*/10 0,30 8-18/2 1,15 JAN-JUN MON,WED,FRI");

BENCHMARK_CAPTURE(next_occurrence, every_5_minutes_utc, "*/5 * * * *", "UTC");
BENCHMARK_CAPTURE(next_occurrence, every_5_minutes_berlin, "*/5 * * * *", "Europe/Berlin");
BENCHMARK_CAPTURE(next_occurrence, weekdays_at_9_utc, "0 9 * * MON-FRI", "UTC");
BENCHMARK_CAPTURE(next_occurrence, weekdays_at_9_berlin, "0 9 * * MON-FRI", "Europe/Berlin");
BENCHMARK_CAPTURE(next_occurrence, monthly_utc, "0 0 1 * *", "UTC");
BENCHMARK_CAPTURE(next_occurrence, monthly_berlin, "0 0 1 * *", "Europe/Berlin");
BENCHMARK_CAPTURE(next_occurrence, every_2_seconds_berlin, "*/2 * * * * *", "Europe/Berlin");
BENCHMARK_CAPTURE(next_occurrence, fixed_hour_berlin, "30 2 * * *", "Europe/Berlin");
// Not typical: the rarest kind of date (29 February on a Sunday, up to 28 years ahead).
BENCHMARK_CAPTURE(next_occurrence, leap_day_sunday_berlin, "0 0 29 2 */7", "Europe/Berlin");
