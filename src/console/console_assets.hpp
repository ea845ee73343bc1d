// The page's files (src/console/assets/), embedded in the binary at build time by
// cmake/embed_console_assets.cmake: the console works offline, from any directory, with no
// build step of its own.
#pragma once

#include <span>
#include <string_view>

namespace hourglass::console {

struct Asset {
    std::string_view path;  // as served: "/", "/app.js", "/style.css"
    std::string_view content_type;
    std::string_view body;
};

std::span<const Asset> console_assets();

}  // namespace hourglass::console
