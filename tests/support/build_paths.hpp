// Where this build and its checkout are. Only build_paths.cpp is compiled with the paths, so
// the other test objects do not embed the checkout's location and a clone at another path
// (each CI run) reuses them from ccache.
#pragma once

#include <string>

namespace hourglass::testing {

const std::string& source_dir();        // the checkout
const std::string& build_dir();         // the CMake build directory
const std::string& hourglass_binary();  // the hourglass of this build
const std::string& services_script();   // scripts/services of the checkout

}  // namespace hourglass::testing
