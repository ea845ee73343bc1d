// Defaults that components and the settings table (src/cli/settings.hpp) share: each is typed
// here once; the components' option structs start from it, and `--help` and
// docs/reference.md's "Settings" show it through the table.
#pragma once

#include "hourglass/time.hpp"

namespace hourglass {

inline constexpr Milliseconds kDefaultHorizon{60000};          // --horizon
inline constexpr Milliseconds kDefaultLease{30000};            // --lease
inline constexpr Milliseconds kDefaultMaxClockOffset{1000};    // --max-clock-offset
inline constexpr Milliseconds kDefaultRetention{7LL * 86400000};  // --retention

}  // namespace hourglass
