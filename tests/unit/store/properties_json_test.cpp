// The `hourglass.jobs.properties` column (include/hourglass/properties_json.hpp): lossless
// round trip of every property and header type, readable JSON, rejection of any other shape,
// the UTF-8 check PostgreSQL text needs, and base64.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hourglass/properties_json.hpp"

namespace hourglass {
namespace {

using nlohmann::json;

std::optional<BasicProperties> round_trip(const BasicProperties& properties) {
    // Through text too, as the jsonb column does.
    return properties_from_json(json::parse(properties_to_json(properties).dump()));
}

BasicProperties with_headers(FieldTable headers) {
    BasicProperties p;
    p.headers = std::move(headers);
    return p;
}

FieldTable every_type_table() {
    return {
        {"void", Void{}},
        {"true", true},
        {"false", false},
        {"i8", std::numeric_limits<std::int8_t>::min()},
        {"u8", std::numeric_limits<std::uint8_t>::max()},
        {"i16", std::numeric_limits<std::int16_t>::min()},
        {"u16", std::numeric_limits<std::uint16_t>::max()},
        {"i32", std::numeric_limits<std::int32_t>::min()},
        {"u32", std::numeric_limits<std::uint32_t>::max()},
        {"i64", std::numeric_limits<std::int64_t>::min()},
        {"i64max", std::numeric_limits<std::int64_t>::max()},
        {"u64", std::numeric_limits<std::uint64_t>::max()},
        {"f32", 0.1f},
        {"f32min", std::numeric_limits<float>::denorm_min()},
        {"f64", 0.1},
        {"f64max", std::numeric_limits<double>::max()},
        {"f64negzero", -0.0},
        {"decimal", Decimal{255, std::numeric_limits<std::uint32_t>::max()}},
        {"str", std::string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80")},
        {"empty", std::string()},
        {"timestamp", Timestamp{std::numeric_limits<std::uint64_t>::max()}},
        {"bytes", ByteArray{"plain text bytes"}},
        {"binary", ByteArray{std::string("\x00\x01\xfe\xff", 4)}},
        {"array", FieldArray{std::int32_t{1}, std::string("two"), Void{}, FieldArray{},
                             FieldArray{FieldTable{{"deep", 3.5}}}}},
        {"table", FieldTable{{"nested", FieldArray{std::int16_t{1}, Void{}}},
                             {"dup", std::int32_t{1}},
                             {"dup", std::int32_t{2}},
                             {"inner", FieldTable{{"x", std::uint8_t{1}}}}}},
        {"emptytable", FieldTable{}},
        {"dup", std::string("first")},
        {"dup", std::int64_t{2}},
    };
}

BasicProperties every_property() {
    BasicProperties p;
    p.content_type = "application/json";
    p.content_encoding = "gzip";
    p.headers = every_type_table();
    p.delivery_mode = 2;
    p.priority = 9;
    p.correlation_id = "corr-1";
    p.reply_to = "replies";
    p.expiration = "60000";
    p.message_id = "job-1";
    p.timestamp = 1795339800;
    p.type = "order";
    p.user_id = "alice";
    p.app_id = "shop";
    p.cluster_id = "c1";
    return p;
}

// --- round trips ----------------------------------------------------------------------------

TEST(PropertiesJson, every_property_and_header_type_round_trips) {
    const auto p = every_property();
    EXPECT_EQ(round_trip(p), p);
}

TEST(PropertiesJson, empty_properties_round_trip_as_an_empty_object) {
    EXPECT_EQ(properties_to_json(BasicProperties{}), json::object());
    EXPECT_EQ(round_trip(BasicProperties{}), BasicProperties{});
}

TEST(PropertiesJson, absent_and_empty_header_tables_stay_distinct) {
    const auto empty = with_headers({});
    const auto back = round_trip(empty);
    ASSERT_TRUE(back.has_value());
    ASSERT_TRUE(back->headers.has_value());
    EXPECT_TRUE(back->headers->empty());
    EXPECT_FALSE(round_trip(BasicProperties{})->headers.has_value());
}

TEST(PropertiesJson, non_finite_floats_round_trip) {
    const auto p = with_headers({{"f32nan", std::numeric_limits<float>::quiet_NaN()},
                                 {"f32inf", std::numeric_limits<float>::infinity()},
                                 {"f32ninf", -std::numeric_limits<float>::infinity()},
                                 {"f64nan", std::numeric_limits<double>::quiet_NaN()},
                                 {"f64inf", std::numeric_limits<double>::infinity()},
                                 {"f64ninf", -std::numeric_limits<double>::infinity()}});
    const auto back = round_trip(p);
    ASSERT_TRUE(back.has_value());
    ASSERT_TRUE(back->headers.has_value());
    const auto& h = *back->headers;
    ASSERT_EQ(h.size(), 6u);
    // NaN != NaN, so compare field by field.
    ASSERT_TRUE(std::holds_alternative<float>(h[0].second.value));
    EXPECT_TRUE(std::isnan(std::get<float>(h[0].second.value)));
    EXPECT_EQ(h[1].second, FieldValue{std::numeric_limits<float>::infinity()});
    EXPECT_EQ(h[2].second, FieldValue{-std::numeric_limits<float>::infinity()});
    ASSERT_TRUE(std::holds_alternative<double>(h[3].second.value));
    EXPECT_TRUE(std::isnan(std::get<double>(h[3].second.value)));
    EXPECT_EQ(h[4].second, FieldValue{std::numeric_limits<double>::infinity()});
    EXPECT_EQ(h[5].second, FieldValue{-std::numeric_limits<double>::infinity()});
    for (std::size_t i = 0; i < h.size(); ++i) EXPECT_EQ(h[i].first, p.headers->at(i).first);
}

TEST(PropertiesJson, non_finite_floats_are_stored_as_text) {
    const auto j = properties_to_json(with_headers({{"n", std::numeric_limits<double>::quiet_NaN()},
                                                    {"i", -std::numeric_limits<float>::infinity()}}));
    EXPECT_EQ(j["headers"][0][1], (json{{"t", "f64"}, {"s", "NaN"}}));
    EXPECT_EQ(j["headers"][1][1], (json{{"t", "f32"}, {"s", "-Infinity"}}));
}

TEST(PropertiesJson, non_utf8_and_nul_strings_are_stored_as_base64_and_round_trip) {
    const std::string nul("a\0b", 3);
    const std::string latin1("caf\xe9");
    BasicProperties p = with_headers({{"nul", nul},
                                      {latin1, latin1},
                                      {"bytes", ByteArray{nul}},
                                      {"arr", FieldArray{latin1}}});
    p.message_id = latin1;
    p.correlation_id = nul;
    p.content_type = "text/plain";
    const auto j = properties_to_json(p);
    EXPECT_EQ(j["message_id"], (json{{"b64", "Y2Fm6Q=="}}));
    EXPECT_EQ(j["correlation_id"], (json{{"b64", "YQBi"}}));
    EXPECT_EQ(j["content_type"], "text/plain");
    EXPECT_EQ(j["headers"][0][1], (json{{"t", "str"}, {"v", {{"b64", "YQBi"}}}}));
    EXPECT_EQ(j["headers"][1][0], (json{{"b64", "Y2Fm6Q=="}}));
    EXPECT_EQ(round_trip(p), p);
}

TEST(PropertiesJson, values_are_readable_typed_json) {
    const auto j = properties_to_json(with_headers({{"n", std::int32_t{5}},
                                                    {"s", std::string("text")},
                                                    {"d", Decimal{2, 150}},
                                                    {"ts", Timestamp{1795339800}},
                                                    {"v", Void{}}}));
    EXPECT_EQ(j["headers"], json::parse(R"([
        ["n", {"t": "i32", "v": 5}],
        ["s", {"t": "str", "v": "text"}],
        ["d", {"t": "decimal", "v": 150, "decimals": 2}],
        ["ts", {"t": "timestamp", "v": 1795339800}],
        ["v", {"t": "void"}]
    ])"));
}

TEST(PropertiesJson, header_order_and_repeated_keys_are_kept) {
    const auto p = with_headers({{"b", std::int32_t{1}},
                                 {"a", std::int32_t{2}},
                                 {"b", std::int32_t{3}},
                                 {"a", std::string("4")}});
    const auto back = round_trip(p);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->headers, p.headers);
}

TEST(PropertiesJson, integer_types_are_not_confused) {
    // The same number under every integer type must come back under its own type.
    const FieldTable table = {{"a", std::int8_t{7}},   {"b", std::uint8_t{7}},
                              {"c", std::int16_t{7}},  {"d", std::uint16_t{7}},
                              {"e", std::int32_t{7}},  {"f", std::uint32_t{7}},
                              {"g", std::int64_t{7}},  {"h", std::uint64_t{7}},
                              {"i", Timestamp{7}},     {"j", 7.0f},
                              {"k", 7.0},              {"l", Decimal{0, 7}}};
    const auto back = round_trip(with_headers(table));
    ASSERT_TRUE(back.has_value());
    ASSERT_TRUE(back->headers.has_value());
    ASSERT_EQ(back->headers->size(), table.size());
    for (std::size_t i = 0; i < table.size(); ++i) {
        EXPECT_EQ(back->headers->at(i).second.value.index(), table[i].second.value.index()) << i;
    }
    EXPECT_EQ(*back->headers, table);
}

TEST(PropertiesJson, string_and_byte_array_are_not_confused) {
    const FieldTable table = {{"s", std::string("x")}, {"b", ByteArray{"x"}}};
    EXPECT_EQ(round_trip(with_headers(table))->headers, table);
}

TEST(PropertiesJson, deeply_nested_values_round_trip) {
    FieldValue value = std::int32_t{1};
    for (int i = 0; i < 50; ++i) {
        value = (i % 2 == 0) ? FieldValue{FieldArray{value}} : FieldValue{FieldTable{{"k", value}}};
    }
    const auto p = with_headers({{"deep", value}});
    EXPECT_EQ(round_trip(p), p);
}

// --- malformed shapes -----------------------------------------------------------------------

class PropertiesFromJsonRejects : public ::testing::TestWithParam<const char*> {};

TEST_P(PropertiesFromJsonRejects, shape) {
    EXPECT_EQ(properties_from_json(json::parse(GetParam())), std::nullopt) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(
    NotAnObject, PropertiesFromJsonRejects,
    ::testing::Values("null", "[]", "5", "\"text\"", "true"));

INSTANTIATE_TEST_SUITE_P(
    WrongPropertyTypes, PropertiesFromJsonRejects,
    ::testing::Values(R"({"content_type": 5})", R"({"message_id": null})",
                      R"({"message_id": ["a"]})", R"({"message_id": {"b64": 5}})",
                      R"({"message_id": {"hex": "00"}})", R"({"delivery_mode": "2"})",
                      R"({"delivery_mode": 2.5})", R"({"delivery_mode": 256})",
                      R"({"delivery_mode": -1})", R"({"priority": true})",
                      R"({"timestamp": -1})", R"({"timestamp": 1.5})",
                      R"({"timestamp": "1795339800"})", R"({"headers": 5})",
                      R"({"headers": "text"})", R"({"headers": [5]})",
                      R"({"headers": [["k"]]})", R"({"headers": [["k", {"t": "void"}, 1]]})",
                      R"({"headers": [[5, {"t": "void"}]]})"));

INSTANTIATE_TEST_SUITE_P(
    OutOfRangeIntegers, PropertiesFromJsonRejects,
    ::testing::Values(R"({"headers": [["k", {"t": "i8", "v": 300}]]})",
                      R"({"headers": [["k", {"t": "i8", "v": 128}]]})",
                      R"({"headers": [["k", {"t": "i8", "v": -129}]]})",
                      R"({"headers": [["k", {"t": "u8", "v": 256}]]})",
                      R"({"headers": [["k", {"t": "u8", "v": -1}]]})",
                      R"({"headers": [["k", {"t": "i16", "v": 32768}]]})",
                      R"({"headers": [["k", {"t": "u16", "v": 65536}]]})",
                      R"({"headers": [["k", {"t": "i32", "v": 2147483648}]]})",
                      R"({"headers": [["k", {"t": "i32", "v": -2147483649}]]})",
                      R"({"headers": [["k", {"t": "u32", "v": 4294967296}]]})",
                      R"({"headers": [["k", {"t": "i64", "v": 9223372036854775808}]]})",
                      R"({"headers": [["k", {"t": "u64", "v": -1}]]})",
                      R"({"headers": [["k", {"t": "timestamp", "v": -1}]]})",
                      R"({"headers": [["k", {"t": "decimal", "v": 1, "decimals": 256}]]})",
                      R"({"headers": [["k", {"t": "decimal", "v": 4294967296, "decimals": 2}]]})"));

INSTANTIATE_TEST_SUITE_P(
    WrongValueShapes, PropertiesFromJsonRejects,
    ::testing::Values(R"({"headers": [["k", {"t": "nope", "v": 1}]]})",
                      R"({"headers": [["k", {"v": 1}]]})",
                      R"({"headers": [["k", {"t": 5, "v": 1}]]})",
                      R"({"headers": [["k", {"t": "i32"}]]})",
                      R"({"headers": [["k", {"t": "i32", "v": 1.5}]]})",
                      R"({"headers": [["k", {"t": "i32", "v": "1"}]]})",
                      R"({"headers": [["k", {"t": "bool", "v": 1}]]})",
                      R"({"headers": [["k", {"t": "f64", "v": "1.5"}]]})",
                      R"({"headers": [["k", {"t": "f64", "s": "nan"}]]})",
                      R"({"headers": [["k", {"t": "f32", "s": 5}]]})",
                      R"({"headers": [["k", {"t": "str", "v": 5}]]})",
                      R"({"headers": [["k", {"t": "bytes", "v": null}]]})",
                      R"({"headers": [["k", {"t": "decimal", "v": 1}]]})",
                      R"({"headers": [["k", {"t": "array", "v": [5]}]]})",
                      R"({"headers": [["k", {"t": "table", "v": [["a"]]}]]})",
                      R"({"headers": [["k", 5]]})"));

INSTANTIATE_TEST_SUITE_P(
    BadBase64, PropertiesFromJsonRejects,
    ::testing::Values(R"({"message_id": {"b64": "abc"}})",     // length not a multiple of 4
                      R"({"message_id": {"b64": "ab!d"}})",    // not in the alphabet
                      R"({"message_id": {"b64": "a"}})",
                      R"({"headers": [["k", {"t": "str", "v": {"b64": "@@@@"}}]]})",
                      R"({"headers": [[{"b64": "????"}, {"t": "void"}]]})"));

TEST(PropertiesFromJson, null_or_object_where_an_array_belongs_is_rejected) {
    for (const char* text :
         {R"({"headers": null})", R"({"headers": {"k": ["k", {"t": "void"}]}})",
          R"({"headers": [["k", {"t": "array", "v": null}]]})",
          R"({"headers": [["k", {"t": "table", "v": null}]]})",
          R"({"headers": [["k", {"t": "array", "v": {"x": {"t": "void"}}}]]})"}) {
        EXPECT_EQ(properties_from_json(json::parse(text)), std::nullopt) << text;
    }
}

TEST(PropertiesFromJson, nesting_beyond_the_depth_bound_is_rejected_without_crashing) {
    json value = {{"t", "i32"}, {"v", 1}};
    for (int i = 0; i < 200; ++i) value = {{"t", "array"}, {"v", json::array({value})}};
    const json document = {{"headers", json::array({json::array({"k", value})})}};
    EXPECT_EQ(properties_from_json(document), std::nullopt);
}

TEST(PropertiesFromJson, unknown_top_level_keys_are_ignored_and_known_ones_read) {
    const auto p = properties_from_json(json::parse(
        R"({"message_id": "job-1", "priority": 3, "delivery_mode": 2, "timestamp": 5})"));
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->message_id, "job-1");
    EXPECT_EQ(p->priority, std::uint8_t{3});
    EXPECT_EQ(p->delivery_mode, std::uint8_t{2});
    EXPECT_EQ(p->timestamp, std::uint64_t{5});
    EXPECT_EQ(p->headers, std::nullopt);
    EXPECT_EQ(p->content_type, std::nullopt);
}

TEST(PropertiesFromJson, boundary_integers_are_accepted) {
    const auto p = properties_from_json(json::parse(R"({"headers": [
        ["a", {"t": "i8", "v": -128}], ["b", {"t": "i8", "v": 127}],
        ["c", {"t": "u8", "v": 255}], ["d", {"t": "i64", "v": -9223372036854775808}],
        ["e", {"t": "u64", "v": 18446744073709551615}]]})"));
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(*p->headers, (FieldTable{{"a", std::int8_t{-128}},
                                       {"b", std::int8_t{127}},
                                       {"c", std::uint8_t{255}},
                                       {"d", std::numeric_limits<std::int64_t>::min()},
                                       {"e", std::numeric_limits<std::uint64_t>::max()}}));
}

// --- is_storable_text -----------------------------------------------------------------------

TEST(IsStorableText, ascii_and_empty_are_storable) {
    EXPECT_TRUE(is_storable_text(""));
    EXPECT_TRUE(is_storable_text("hello, world \x7f"));
}

TEST(IsStorableText, valid_multibyte_sequences_are_storable) {
    EXPECT_TRUE(is_storable_text("\xc2\x80"));              // U+0080, smallest 2-byte
    EXPECT_TRUE(is_storable_text("caf\xc3\xa9"));           // é
    EXPECT_TRUE(is_storable_text("\xdf\xbf"));              // U+07FF
    EXPECT_TRUE(is_storable_text("\xe0\xa0\x80"));          // U+0800, smallest 3-byte
    EXPECT_TRUE(is_storable_text("\xe2\x82\xac"));          // €
    EXPECT_TRUE(is_storable_text("\xed\x9f\xbf"));          // U+D7FF, just below surrogates
    EXPECT_TRUE(is_storable_text("\xee\x80\x80"));          // U+E000, just above surrogates
    EXPECT_TRUE(is_storable_text("\xef\xbf\xbd"));          // U+FFFD
    EXPECT_TRUE(is_storable_text("\xf0\x90\x80\x80"));      // U+10000, smallest 4-byte
    EXPECT_TRUE(is_storable_text("\xf0\x9f\x98\x80"));      // 😀
    EXPECT_TRUE(is_storable_text("\xf4\x8f\xbf\xbf"));      // U+10FFFF, the last code point
}

TEST(IsStorableText, nul_is_not_storable) {
    EXPECT_FALSE(is_storable_text(std::string_view("\0", 1)));
    EXPECT_FALSE(is_storable_text(std::string_view("ab\0cd", 5)));
}

TEST(IsStorableText, overlong_encodings_are_not_storable) {
    EXPECT_FALSE(is_storable_text("\xc0\x80"));          // overlong NUL
    EXPECT_FALSE(is_storable_text("\xc0\xaf"));          // overlong '/'
    EXPECT_FALSE(is_storable_text("\xc1\xbf"));
    EXPECT_FALSE(is_storable_text("\xe0\x80\x80"));
    EXPECT_FALSE(is_storable_text("\xe0\x9f\xbf"));      // overlong U+07FF
    EXPECT_FALSE(is_storable_text("\xf0\x80\x80\x80"));
    EXPECT_FALSE(is_storable_text("\xf0\x8f\xbf\xbf"));  // overlong U+FFFF
}

TEST(IsStorableText, surrogates_are_not_storable) {
    EXPECT_FALSE(is_storable_text("\xed\xa0\x80"));  // U+D800
    EXPECT_FALSE(is_storable_text("\xed\xbf\xbf"));  // U+DFFF
    EXPECT_FALSE(is_storable_text("\xed\xa0\xbd\xed\xb8\x80"));  // CESU-8 pair
}

TEST(IsStorableText, code_points_beyond_u10ffff_are_not_storable) {
    EXPECT_FALSE(is_storable_text("\xf4\x90\x80\x80"));  // U+110000
    EXPECT_FALSE(is_storable_text("\xf5\x80\x80\x80"));
    EXPECT_FALSE(is_storable_text("\xf8\x88\x80\x80\x80"));  // 5-byte form
    EXPECT_FALSE(is_storable_text("\xfc\x84\x80\x80\x80\x80"));
    EXPECT_FALSE(is_storable_text("\xfe"));
    EXPECT_FALSE(is_storable_text("\xff"));
}

TEST(IsStorableText, truncated_sequences_are_not_storable) {
    EXPECT_FALSE(is_storable_text("\xc3"));
    EXPECT_FALSE(is_storable_text("caf\xc3"));
    EXPECT_FALSE(is_storable_text("\xe2\x82"));
    EXPECT_FALSE(is_storable_text("\xf0\x9f\x98"));
    EXPECT_FALSE(is_storable_text("\xe2\x82x"));   // continuation replaced by ASCII
    EXPECT_FALSE(is_storable_text("\xc3\xc3\xa9"));  // lead byte followed by a lead byte
}

TEST(IsStorableText, lone_continuation_bytes_are_not_storable) {
    EXPECT_FALSE(is_storable_text("\x80"));
    EXPECT_FALSE(is_storable_text("a\xbf"));
    EXPECT_FALSE(is_storable_text("\xc3\xa9\xa9"));
}

// --- base64 ---------------------------------------------------------------------------------

TEST(Base64, rfc4648_test_vectors) {
    const std::vector<std::pair<std::string, std::string>> vectors = {
        {"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},        {"foo", "Zm9v"},
        {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
    for (const auto& [plain, encoded] : vectors) {
        EXPECT_EQ(base64_encode(plain), encoded) << plain;
        EXPECT_EQ(base64_decode(encoded), plain) << encoded;
    }
}

TEST(Base64, all_256_byte_values_round_trip) {
    std::string bytes;
    for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
    const auto encoded = base64_encode(bytes);
    EXPECT_EQ(encoded.size(), 344u);
    EXPECT_EQ(encoded.find_first_not_of(
                  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="),
              std::string::npos);
    EXPECT_EQ(base64_decode(encoded), bytes);
}

TEST(Base64, lengths_zero_to_five_of_any_bytes_round_trip) {
    for (std::size_t length = 0; length <= 5; ++length) {
        for (const int fill : {0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff}) {
            const std::string bytes(length, static_cast<char>(fill));
            const auto encoded = base64_encode(bytes);
            EXPECT_EQ(encoded.size(), 4 * ((length + 2) / 3)) << length;
            EXPECT_EQ(base64_decode(encoded), bytes) << "length " << length << " fill " << fill;
        }
    }
}

TEST(Base64, padded_zero_bytes_are_kept) {
    // Trailing NUL bytes must not be mistaken for padding.
    EXPECT_EQ(base64_decode("AA=="), std::string(1, '\0'));
    EXPECT_EQ(base64_decode("AAA="), std::string(2, '\0'));
    EXPECT_EQ(base64_decode("AAAA"), std::string(3, '\0'));
}

TEST(Base64, malformed_input_is_rejected) {
    EXPECT_EQ(base64_decode("abc"), std::nullopt);
    EXPECT_EQ(base64_decode("abcde"), std::nullopt);
    EXPECT_EQ(base64_decode("ab!d"), std::nullopt);
    EXPECT_EQ(base64_decode("@@@@"), std::nullopt);
}

}  // namespace
}  // namespace hourglass
