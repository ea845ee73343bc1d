// The settings of the service commands, one row each: the flag, its environment variable, its
// default, its bounds and what it means. `--help` (main.cpp), the defaults ServiceOptions starts
// from (options.hpp) and the table of docs/reference.md ("Settings", written by
// `settings_markdown()` and checked by tests/unit/cli/settings_test.cpp) all come from here, so
// a default or a bound is typed once.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/time.hpp"

namespace hourglass::cli {

// A duration option and the values that make sense for it (reference §9).
struct DurationOption {
    std::string_view flag;
    Milliseconds min;
    Milliseconds max;
};
inline constexpr DurationOption kHorizonOption{"--horizon", Milliseconds{1000}, Milliseconds{3600000}};
inline constexpr DurationOption kLeaseOption{"--lease", Milliseconds{1000}, Milliseconds{3600000}};
inline constexpr DurationOption kResendAfterOption{"--resend-after", Milliseconds{1000},
                                                   Milliseconds{7LL * 86400000}};
inline constexpr DurationOption kMaxDelayOption{"--max-delay", Milliseconds{1000},
                                                Milliseconds{36500LL * 86400000}};
inline constexpr DurationOption kStopTimeoutOption{"--stop-timeout", Milliseconds{1000},
                                                   Milliseconds{600000}};
inline constexpr DurationOption kRetentionOption{"--retention", Milliseconds{1000},
                                                Milliseconds{36500LL * 86400000}};
inline constexpr DurationOption kMaxClockOffsetOption{"--max-clock-offset", Milliseconds{1},
                                                     Milliseconds{3600000}};
inline constexpr DurationOption kSlowConfirmOption{"--slow-confirm", Milliseconds{1}, Milliseconds{60000}};
inline constexpr DurationOption kTimeoutOption{"--timeout", Milliseconds{100}, Milliseconds{3600000}};

// The values a count option accepts, inclusive.
struct CountRange {
    std::size_t min;
    std::size_t max;
};

inline constexpr std::size_t kDefaultMaxBody = 1024 * 1024;

struct Setting {
    std::string_view flag;       // "--horizon"
    std::string default_value;   // what an unset setting is; empty: none
    std::string_view no_default;  // shown when default_value is empty ("none" if this is too)
    std::string bounds;          // "1s–1h", "1–65536"; empty: none beyond its meaning
    std::optional<CountRange> range;  // checked by the flag's parser (counts)
    std::string_view help;       // one sentence for --help
    std::string_view meaning;    // the reference table's meaning (Markdown)
};

// Every setting, in the order of the reference table.
const std::vector<Setting>& settings();
// The row of `flag`; throws std::out_of_range for a flag not in the table.
const Setting& setting(std::string_view flag);
// HOURGLASS_ and the flag in capitals with `_`: HOURGLASS_MAX_BODY.
std::string environment_variable(std::string_view flag);
// The --help line: the sentence, then its bounds and default in brackets.
std::string help_text(const Setting& setting);
// The reference table: flag, environment, default, bounds, meaning.
std::string settings_markdown();

}  // namespace hourglass::cli
