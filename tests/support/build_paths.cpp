#include "support/build_paths.hpp"

namespace hourglass::testing {

const std::string& source_dir() {
    static const std::string path = HOURGLASS_SOURCE_DIR;
    return path;
}

const std::string& build_dir() {
    static const std::string path = HOURGLASS_BUILD_DIR;
    return path;
}

const std::string& hourglass_binary() {
    static const std::string path = HOURGLASS_BINARY;
    return path;
}

const std::string& services_script() {
    static const std::string path = source_dir() + "/scripts/services";
    return path;
}

}  // namespace hourglass::testing
