#include "hourglass/time.hpp"

#include <date/date.h>

#include <charconv>
#include <limits>
#include <stdexcept>
#include <string>
#include <cctype>

namespace hourglass {

std::chrono::sys_time<std::chrono::microseconds> now_us() noexcept {
    return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
}

TimePoint now_ms() noexcept { return std::chrono::time_point_cast<Milliseconds>(now_us()); }

std::int64_t to_epoch_ms(TimePoint instant) noexcept { return instant.time_since_epoch().count(); }

TimePoint from_epoch_ms(std::int64_t epoch_ms) noexcept { return TimePoint{Milliseconds{epoch_ms}}; }

namespace {

// Reads exactly `width` decimal digits at `pos`, advancing it.
std::optional<int> read_digits(std::string_view text, std::size_t& pos, std::size_t width) {
    if (pos + width > text.size()) return std::nullopt;
    int value = 0;
    for (std::size_t i = 0; i < width; ++i) {
        const char c = text[pos + i];
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + (c - '0');
    }
    pos += width;
    return value;
}

bool expect(std::string_view text, std::size_t& pos, char wanted) {
    if (pos >= text.size() || text[pos] != wanted) return false;
    ++pos;
    return true;
}

}  // namespace

std::optional<TimePoint> parse_rfc3339(std::string_view text) noexcept {
    // Bound the work on hostile input: a valid timestamp is short.
    if (text.size() > 64) return std::nullopt;
    std::size_t pos = 0;
    const auto year = read_digits(text, pos, 4);
    if (!year || !expect(text, pos, '-')) return std::nullopt;
    const auto month = read_digits(text, pos, 2);
    if (!month || !expect(text, pos, '-')) return std::nullopt;
    const auto day = read_digits(text, pos, 2);
    if (!day || pos >= text.size()) return std::nullopt;
    const char separator = text[pos++];
    if (separator != 'T' && separator != 't' && separator != ' ') return std::nullopt;
    const auto hour = read_digits(text, pos, 2);
    if (!hour || !expect(text, pos, ':')) return std::nullopt;
    const auto minute = read_digits(text, pos, 2);
    if (!minute || !expect(text, pos, ':')) return std::nullopt;
    const auto second = read_digits(text, pos, 2);
    if (!second) return std::nullopt;

    int millis = 0;
    if (pos < text.size() && text[pos] == '.') {
        ++pos;
        std::size_t digits = 0;
        while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
            if (digits < 3) millis = millis * 10 + (text[pos] - '0');
            ++digits;
            ++pos;
        }
        if (digits == 0) return std::nullopt;
        for (std::size_t i = digits; i < 3; ++i) millis *= 10;
    }

    if (pos >= text.size()) return std::nullopt;  // the offset is mandatory
    int offset_minutes = 0;
    const char zone = text[pos++];
    if (zone == '+' || zone == '-') {
        const auto offset_hours = read_digits(text, pos, 2);
        if (!offset_hours || !expect(text, pos, ':')) return std::nullopt;
        const auto offset_mins = read_digits(text, pos, 2);
        if (!offset_mins || *offset_hours > 23 || *offset_mins > 59) return std::nullopt;
        offset_minutes = (*offset_hours * 60 + *offset_mins) * (zone == '-' ? -1 : 1);
    } else if (zone != 'Z' && zone != 'z') {
        return std::nullopt;
    }
    if (pos != text.size()) return std::nullopt;

    const date::year_month_day ymd{date::year{*year}, date::month{static_cast<unsigned>(*month)},
                                   date::day{static_cast<unsigned>(*day)}};
    // A leap second (:60) is accepted by RFC 3339 but cannot be represented; reject it.
    if (!ymd.ok() || *hour > 23 || *minute > 59 || *second > 59) return std::nullopt;

    const auto local = date::sys_days{ymd} + std::chrono::hours{*hour} +
                       std::chrono::minutes{*minute} + std::chrono::seconds{*second} +
                       Milliseconds{millis};
    return TimePoint{local - std::chrono::minutes{offset_minutes}};
}

std::string format_rfc3339_ms(TimePoint instant) {
    return date::format("%FT%TZ", instant);
}

Milliseconds parse_duration(const std::string& text) {
    static constexpr const char* kForms = "a number and a unit: 500ms, 5s, 10m, 2h, 7d";
    std::int64_t value = 0;
    const auto* end = text.data() + text.size();
    const auto [unit_start, error] = std::from_chars(text.data(), end, value);
    if (error != std::errc{} || value < 0) {
        throw std::invalid_argument("'" + text + "' is not a duration (" + kForms + ")");
    }
    const std::string unit(unit_start, end);
    if (unit.empty()) {
        // A bare number once meant milliseconds, silently: `--horizon 60` was 60 ms.
        throw std::invalid_argument("'" + text + "' has no unit: write " + text + "s for seconds or " +
                                    text + "ms for milliseconds (" + kForms + ")");
    }
    static const std::pair<const char*, std::int64_t> kUnits[] = {
        {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
    for (const auto& [name, factor] : kUnits) {
        if (unit != name) continue;
        if (value > std::numeric_limits<std::int64_t>::max() / factor) {
            throw std::invalid_argument("'" + text + "' is too long a duration");
        }
        return Milliseconds{value * factor};
    }
    throw std::invalid_argument("'" + text + "' has an unknown unit (" + kForms + ")");
}

std::string format_duration(Milliseconds duration) {
    const auto ms = duration.count();
    const auto whole = [&](std::int64_t factor) { return ms != 0 && ms % factor == 0; };
    if (whole(86400000)) return std::to_string(ms / 86400000) + "d";
    if (whole(3600000)) return std::to_string(ms / 3600000) + "h";
    if (whole(60000) && ms >= 120000) return std::to_string(ms / 60000) + "m";
    if (whole(1000)) return std::to_string(ms / 1000) + "s";
    return std::to_string(ms) + "ms";
}

}  // namespace hourglass
