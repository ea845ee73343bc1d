// The console's views (reference §9) as pure functions from rows to JSON, so that what the page
// and /api/ show is unit-tested without a database: the lateness histogram and percentiles,
// the upcoming-load buckets (with what a capped count still says), a job's row, the bounds of
// a routing-key prefix search, and the operator token check.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/text.hpp"
#include "hourglass/time.hpp"

namespace hourglass::console {

// Upper bounds (ms) of the lateness histogram's buckets; a last bucket holds the rest.
inline constexpr double kLatenessBucketsMs[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000};

// {"releases": n, "p50_ms", "p99_ms", "max_ms" (null when empty),
//  "buckets": [{"le_ms": 1, "releases": n}, ..., {"le_ms": null, "releases": n}]}
nlohmann::json lateness_view(std::vector<double> lateness_ms);

// The nearest-rank percentile of sorted values (q in [0, 1]); nothing when empty.
std::optional<double> percentile(const std::vector<double>& sorted, double q);

// One counted slot of the upcoming load: jobs due in [from + slot * width, + width).
struct SlotCount {
    std::int64_t slot = 0;
    std::int64_t jobs = 0;
};

// `slots` buckets of `width` from `from`, zero where nothing is due. The count read at most
// `cap` rows: when `counted` reached it, the last counted slot may be partial and every later
// slot is unknown, so the view says "capped" and up to where the counts are exact.
// {"from": time, "width_ms": ms, "slots": [{"start": time, "jobs": n}], "capped": bool,
//  "exact_until": time}, times in RFC 3339 (UTC, milliseconds).
nlohmann::json upcoming_view(TimePoint from, Milliseconds width, int slots,
                             const std::vector<SlotCount>& counts, std::int64_t counted,
                             std::int64_t cap);

// A body as the console shows it: text when it is UTF-8 (cut to `max_bytes`), else its size.
// {"bytes": n, "text": "..." | null, "truncated": bool}
nlohmann::json body_view(std::string_view body, std::size_t max_bytes);


// Whether `given` is the operator token, in time that depends on neither's content or length
// (both are hashed first, and the digests compared in constant time).
bool token_matches(std::string_view given, std::string_view expected);

// The JSON text of a view. User text that slipped past validation is replaced, never thrown on.
std::string dump(const nlohmann::json& view);

}  // namespace hourglass::console
