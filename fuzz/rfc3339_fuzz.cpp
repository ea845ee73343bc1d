// libFuzzer target: RFC 3339 parsing (x-schedule-at, x-cron-until). Never crashes; whatever
// parses to an instant hourglass stores (years 0001 to 9999 in UTC) formats back to a string
// that parses to the same instant. A time outside that range may parse (year 0000 east of
// UTC is an instant before year 1): every caller then refuses it as out of range.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "hourglass/command.hpp"
#include "hourglass/time.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto parsed = hourglass::parse_rfc3339(text);
    if (!parsed) return 0;
    const auto ms = hourglass::to_epoch_ms(*parsed);
    if (ms < hourglass::kMinDueEpochMs || ms > hourglass::kMaxDueEpochMs) return 0;
    const auto again = hourglass::parse_rfc3339(hourglass::format_rfc3339_ms(*parsed));
    if (!again || *again != *parsed) std::abort();
    return 0;
}
