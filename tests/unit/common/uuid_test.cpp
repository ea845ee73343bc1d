// generate_uuid (src/common/uuid.cpp): ids for schedules without message_id (reference §3.1).
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "hourglass/command.hpp"

namespace hourglass {
namespace {

// --- generate_uuid --------------------------------------------------------------------------

TEST(GenerateUuid, is_a_canonical_version_4_uuid_and_unique) {
    const std::regex canonical("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
    std::set<std::string> seen;
    for (int i = 0; i < 100; ++i) {
        const auto id = generate_uuid();
        EXPECT_TRUE(std::regex_match(id, canonical)) << id;
        seen.insert(id);
    }
    EXPECT_EQ(seen.size(), 100u);
}

}  // namespace
}  // namespace hourglass
