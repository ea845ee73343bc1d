// libFuzzer target: RFC 3339 parsing (x-schedule-at, x-cron-until). Never crashes; whatever
// parses formats back to a string that parses to the same instant.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "hourglass/time.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto parsed = hourglass::parse_rfc3339(text);
    if (!parsed) return 0;
    const auto again = hourglass::parse_rfc3339(hourglass::format_rfc3339_ms(*parsed));
    if (!again || *again != *parsed) std::abort();
    return 0;
}
