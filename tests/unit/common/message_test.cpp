// What AMQP cannot carry (include/hourglass/message.hpp, unpublishable_reason): a text property
// or a field name at any depth of the headers over 255 bytes, named by where it is.
#include <gtest/gtest.h>

#include <string>

#include "hourglass/message.hpp"

namespace hourglass {
namespace {

const std::string kLong(256, 'n');

TEST(UnpublishableReason, a_message_within_every_bound_is_publishable) {
    BasicProperties properties;
    properties.content_type = std::string(255, 'c');
    properties.headers = FieldTable{{std::string(255, 'h'), FieldTable{{"inner", FieldArray{1, "x"}}}}};
    EXPECT_EQ(unpublishable_reason(properties), std::nullopt);
    EXPECT_EQ(unpublishable_reason(BasicProperties{}), std::nullopt);
}

TEST(UnpublishableReason, names_the_text_property_or_the_header_path_over_the_bound) {
    const std::vector<std::pair<BasicProperties, std::string>> cases = [] {
        std::vector<std::pair<BasicProperties, std::string>> all;
        BasicProperties p;
        p.app_id = kLong;
        all.emplace_back(p, "properties.app_id: 256 bytes; AMQP holds at most 255");
        p = {};
        p.headers = FieldTable{{kLong, 1}};
        all.emplace_back(p, "headers: a name of 256 bytes; AMQP holds at most 255");
        p.headers = FieldTable{{"t", FieldTable{{"u", FieldTable{{kLong, 1}}}}}};
        all.emplace_back(p, "headers.t.u: a name of 256 bytes; AMQP holds at most 255");
        p.headers = FieldTable{{"a", FieldArray{1, FieldTable{{kLong, true}}}}};
        all.emplace_back(p, "headers.a: a name of 256 bytes; AMQP holds at most 255");
        return all;
    }();
    for (const auto& [properties, reason] : cases) {
        EXPECT_EQ(unpublishable_reason(properties), reason);
    }
}

}  // namespace
}  // namespace hourglass
