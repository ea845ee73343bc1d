// Time values used across hourglass: UTC instants with millisecond precision.
//
// Parsing returns a value or nothing and never throws on user input; the
// caller decides how to report the error (reference §4).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hourglass {

using Milliseconds = std::chrono::milliseconds;
// An instant on the UTC time line, to the millisecond (sys_time ignores leap seconds, like
// RabbitMQ, PostgreSQL and RFC 3339 tools do).
using TimePoint = std::chrono::sys_time<Milliseconds>;

// The current instant on this host's clock, truncated to milliseconds. The service compares
// due times on PostgreSQL's clock instead (DatabaseClock, src/common/database_clock.hpp).
TimePoint now_ms() noexcept;
// The same instant to the microsecond.
std::chrono::sys_time<std::chrono::microseconds> now_us() noexcept;

// Parses an RFC 3339 date-time with a mandatory offset (`Z`, `z`, `+01:00`, `-05:30`),
// an optional fraction of any length (truncated to milliseconds) and `T`, `t` or a space
// between date and time. Returns nothing for anything else, including out-of-range fields.
std::optional<TimePoint> parse_rfc3339(std::string_view text) noexcept;

// Formats as UTC with exactly three fraction digits: `2026-11-22T09:30:00.250Z` (reference §7).
std::string format_rfc3339_ms(TimePoint instant);

// Milliseconds since the Unix epoch, and back.
std::int64_t to_epoch_ms(TimePoint instant) noexcept;
TimePoint from_epoch_ms(std::int64_t epoch_ms) noexcept;

// A duration written as a number and a unit (`500ms`, `5s`, `10m`, `2h`, `7d`), as every
// duration option and header takes it; throws std::invalid_argument showing the accepted forms
// (a bare number is refused: it once meant milliseconds, silently).
Milliseconds parse_duration(const std::string& text);
// The same form back, in the largest unit that writes it whole (seconds below two minutes):
// 60000 ms is `60s`, 600000 ms `10m`, 250 ms `250ms`. parse_duration(format_duration(d)) == d.
std::string format_duration(Milliseconds duration);

}  // namespace hourglass
