// encoded_size (hourglass/message.hpp) must agree byte for byte with rabbitmq-c's own encoder:
// it decides whether a message fits the connection's frame_max before it is published.
#include <gtest/gtest.h>

#include <vector>

#include "amqp/field_table.hpp"
#include "hourglass/message.hpp"

namespace hourglass::amqp {
namespace {

std::size_t rabbitmq_c_table_size(const FieldTable& table) {
    OutgoingTables tables;
    auto encoded_table = tables.table(table);
    std::vector<char> buffer(1 << 20);
    std::size_t offset = 0;
    const int rc = amqp_encode_table(amqp_bytes_t{buffer.size(), buffer.data()}, &encoded_table,
                                     &offset);
    EXPECT_EQ(rc, AMQP_STATUS_OK);
    return offset;
}

TEST(EncodedSize, header_tables_of_every_field_type_match_rabbitmq_c) {
    FieldTable every_type = {
        {"void", Void{}},           {"bool", true},
        {"i8", std::int8_t{-1}},    {"u8", std::uint8_t{1}},
        {"i16", std::int16_t{-2}},  {"u16", std::uint16_t{2}},
        {"i32", std::int32_t{-3}},  {"u32", std::uint32_t{3}},
        {"i64", std::int64_t{-4}},  {"u64", std::uint64_t{4}},
        {"f32", 1.5f},              {"f64", 2.5},
        {"decimal", Decimal{2, 314}}, {"string", std::string(1000, 's')},
        {"timestamp", Timestamp{1795339800}}, {"bytes", ByteArray{std::string(77, '\0')}},
        {"array", FieldArray{std::int32_t{1}, std::string("two"), FieldArray{true}}},
        {"table", FieldTable{{"nested", FieldTable{{"deeper", std::int64_t{5}}}}}}};
    BasicProperties properties;
    properties.headers = every_type;
    // encoded_size counts the 2 flag bytes besides the table.
    EXPECT_EQ(encoded_size(properties), 2 + rabbitmq_c_table_size(every_type));
    for (const auto& [name, value] : every_type) {
        SCOPED_TRACE(name);
        EXPECT_EQ(encoded_header_size(name, value) + 4, rabbitmq_c_table_size({{name, value}}));
    }
}

TEST(EncodedSize, counts_every_basic_property) {
    BasicProperties properties;
    EXPECT_EQ(encoded_size(properties), 2u);
    properties.content_type = "application/json";  // short strings: 1 + length
    properties.message_id = std::string(255, 'm');
    properties.delivery_mode = 2;
    properties.priority = 9;
    properties.timestamp = 1795339800;
    EXPECT_EQ(encoded_size(properties), 2u + 17 + 256 + 1 + 1 + 8);
}

}  // namespace
}  // namespace hourglass::amqp
