// Renders user bytes for error texts and log lines (reference §4): printable ASCII as it is,
// everything else (control characters, quotes, backslashes, non-ASCII bytes) as \xNN, and at
// most `max_bytes` of the value, so that no value can forge a log line or grow an error text
// beyond a bound.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace hourglass {

// The most bytes of one user value an error text quotes (reference §4).
inline constexpr std::size_t kMaxQuotedBytes = 200;

// 'value' in single quotes, escaped, cut after `max_bytes` bytes of the value with "...".
std::string quote_value(std::string_view bytes, std::size_t max_bytes = kMaxQuotedBytes);

// `text` escaped like quote_value but without quotes, cut to at most `max_bytes` bytes of input
// (for texts that already quote values, such as a database's error message).
std::string printable(std::string_view text, std::size_t max_bytes);

// The smallest string greater than every string that starts with `prefix`, in byte order
// (PostgreSQL's C collation), so that a prefix search is one index range scan; nothing when
// no such string exists (the prefix is empty or made of U+10FFFF only). `prefix` must be
// valid UTF-8; the result is too.
std::optional<std::string> prefix_upper_bound(std::string_view prefix);

}  // namespace hourglass
