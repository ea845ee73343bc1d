// An AMQP 0-9-1 message as hourglass sees it, free of any rabbitmq-c type.
//
// Field values keep their exact AMQP type, so a header published as a signed
// 16-bit integer is released as a signed 16-bit integer (reference §3.1: properties
// are released unchanged). src/amqp/ converts to and from rabbitmq-c.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace hourglass {

struct FieldValue;
// Tables keep their order and may repeat keys, exactly as they arrived on the wire.
using FieldTable = std::vector<std::pair<std::string, FieldValue>>;
using FieldArray = std::vector<FieldValue>;

struct Decimal {
    std::uint8_t decimals = 0;
    std::uint32_t value = 0;
    bool operator==(const Decimal&) const = default;
};
// AMQP timestamp: seconds since the epoch.
struct Timestamp {
    std::uint64_t seconds = 0;
    bool operator==(const Timestamp&) const = default;
};
// AMQP byte array ('x'), distinct from a long string ('S').
struct ByteArray {
    std::string bytes;
    bool operator==(const ByteArray&) const = default;
};
// AMQP void ('V').
struct Void {
    bool operator==(const Void&) const = default;
};

struct FieldValue {
    // Long strings are byte strings: they may hold any bytes, not only UTF-8.
    using Variant = std::variant<Void, bool, std::int8_t, std::uint8_t, std::int16_t, std::uint16_t,
                                 std::int32_t, std::uint32_t, std::int64_t, std::uint64_t, float,
                                 double, Decimal, std::string, Timestamp, ByteArray, FieldArray,
                                 FieldTable>;
    Variant value;

    FieldValue() = default;
    template <typename T>
        requires std::is_constructible_v<Variant, T&&>
    FieldValue(T&& v) : value(std::forward<T>(v)) {}  // NOLINT: implicit by design

    bool operator==(const FieldValue&) const = default;
};

// The basic properties of AMQP 0-9-1; absent ones are empty.
struct BasicProperties {
    std::optional<std::string> content_type;
    std::optional<std::string> content_encoding;
    std::optional<FieldTable> headers;
    std::optional<std::uint8_t> delivery_mode;
    std::optional<std::uint8_t> priority;
    std::optional<std::string> correlation_id;
    std::optional<std::string> reply_to;
    std::optional<std::string> expiration;
    std::optional<std::string> message_id;
    std::optional<std::uint64_t> timestamp;
    std::optional<std::string> type;
    std::optional<std::string> user_id;
    std::optional<std::string> app_id;
    std::optional<std::string> cluster_id;

    bool operator==(const BasicProperties&) const = default;
};

// A message to publish, or one received.
struct Message {
    std::string exchange;
    std::string routing_key;
    std::string body;
    BasicProperties properties;
};

// Looks a header up by name; the first occurrence wins. nullptr when absent.
const FieldValue* find_header(const BasicProperties& properties, std::string_view name) noexcept;
// Sets a header, replacing every existing occurrence.
void set_header(BasicProperties& properties, std::string name, FieldValue value);
// Removes every occurrence of a header. Returns whether any was removed.
bool remove_header(BasicProperties& properties, std::string_view name);

// AMQP short strings (text properties, field names, exchange and routing key names) hold at
// most this many bytes; a longer one cannot be published at all.
inline constexpr std::size_t kMaxShortStringBytes = 255;
// Why the properties cannot be published, naming the property or header ("properties.type:
// 300 bytes; ...", "headers.a.b: a name of 300 bytes; ..."), or nothing when they can: a text
// property or a field name at any depth of the headers over kMaxShortStringBytes.
std::optional<std::string> unpublishable_reason(const BasicProperties& properties);

// Bytes the properties take in an AMQP 0-9-1 content header frame (flags and fields, without
// the frame's own 22 bytes). A content header must fit in one frame (frame_max), so this is
// what decides whether a message can be published at all (reference §4).
std::size_t encoded_size(const BasicProperties& properties);
// Bytes one header entry (name and value) adds to the header table.
std::size_t encoded_header_size(const std::string& name, const FieldValue& value);
// Drops headers, largest first, until the properties take at most `max_bytes` (leaving room
// for a note of at most kDroppedHeadersNoteBytes), keeping headers whose name starts with
// `keep_prefix`. Returns the dropped names with their sizes, in the order dropped.
std::vector<std::pair<std::string, std::size_t>> drop_largest_headers(
    BasicProperties& properties, std::size_t max_bytes, std::string_view keep_prefix);
// "headers dropped to fit the frame size: 'a' (70012 bytes), ..." naming at most 10, escaped;
// never longer than kDroppedHeadersNoteBytes.
std::string describe_dropped_headers(const std::vector<std::pair<std::string, std::size_t>>& dropped);
inline constexpr std::size_t kDroppedHeadersNoteBytes = 4096;

// Frame bytes around the properties of a content header: frame type, channel, size and end
// octet (8), class, weight and body size (12), and the flags are counted by encoded_size.
inline constexpr std::size_t kContentHeaderOverhead = 20;

}  // namespace hourglass
