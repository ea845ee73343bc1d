#include "hourglass/message.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include "common/text.hpp"

namespace hourglass {

const FieldValue* find_header(const BasicProperties& properties, std::string_view name) noexcept {
    if (!properties.headers) return nullptr;
    for (const auto& [key, value] : *properties.headers) {
        if (key == name) return &value;
    }
    return nullptr;
}

void set_header(BasicProperties& properties, std::string name, FieldValue value) {
    remove_header(properties, name);
    if (!properties.headers) properties.headers.emplace();
    properties.headers->emplace_back(std::move(name), std::move(value));
}

bool remove_header(BasicProperties& properties, std::string_view name) {
    if (!properties.headers) return false;
    const auto removed =
        std::erase_if(*properties.headers, [&](const auto& entry) { return entry.first == name; });
    return removed > 0;
}

namespace {

std::size_t encoded_size(const FieldTable& table);

std::size_t encoded_size(const FieldValue& value) {
    return std::visit(
        [](const auto& v) -> std::size_t {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, Void>) return 0;
            else if constexpr (std::is_same_v<T, bool>) return 1;
            else if constexpr (std::is_arithmetic_v<T>) return sizeof(T);
            else if constexpr (std::is_same_v<T, Decimal>) return 5;
            else if constexpr (std::is_same_v<T, Timestamp>) return 8;
            else if constexpr (std::is_same_v<T, std::string>) return 4 + v.size();
            else if constexpr (std::is_same_v<T, ByteArray>) return 4 + v.bytes.size();
            else if constexpr (std::is_same_v<T, FieldArray>) {
                std::size_t size = 4;
                for (const auto& item : v) size += 1 + encoded_size(item);
                return size;
            } else return encoded_size(v);
        },
        value.value);
}

std::size_t encoded_size(const FieldTable& table) {
    std::size_t size = 4;
    for (const auto& [key, value] : table) size += 1 + key.size() + 1 + encoded_size(value);
    return size;
}

}  // namespace

std::size_t encoded_header_size(const std::string& name, const FieldValue& value) {
    return 1 + name.size() + 1 + encoded_size(value);
}

namespace {

// The text properties (AMQP short strings), with their names.
std::array<std::pair<const char*, const std::optional<std::string>*>, 10> text_properties(
    const BasicProperties& p) {
    return {{{"content_type", &p.content_type}, {"content_encoding", &p.content_encoding},
             {"correlation_id", &p.correlation_id}, {"reply_to", &p.reply_to},
             {"expiration", &p.expiration}, {"message_id", &p.message_id}, {"type", &p.type},
             {"user_id", &p.user_id}, {"app_id", &p.app_id}, {"cluster_id", &p.cluster_id}}};
}

std::string joined(const std::vector<std::string_view>& path) {
    std::string text;
    // Names are the client's bytes: escaped, so that a reason logged or stored forges nothing.
    for (const auto part : path) text += (text.empty() ? "" : ".") + printable(part, 64);
    return text;
}

// A field name over a short string's length in `value` (tables and arrays at any depth), named
// by its path; the path is built only for the answer.
std::optional<std::string> long_name_in(const FieldValue& value, std::vector<std::string_view>& path);

std::optional<std::string> long_name_in(const FieldTable& table, std::vector<std::string_view>& path) {
    for (const auto& [name, value] : table) {
        if (name.size() > kMaxShortStringBytes) {
            return joined(path) + ": a name of " + std::to_string(name.size()) +
                   " bytes; AMQP holds at most " + std::to_string(kMaxShortStringBytes);
        }
        path.push_back(name);
        auto found = long_name_in(value, path);
        path.pop_back();
        if (found) return found;
    }
    return std::nullopt;
}

std::optional<std::string> long_name_in(const FieldValue& value, std::vector<std::string_view>& path) {
    if (const auto* table = std::get_if<FieldTable>(&value.value)) return long_name_in(*table, path);
    if (const auto* array = std::get_if<FieldArray>(&value.value)) {
        for (const auto& item : *array) {
            if (auto found = long_name_in(item, path)) return found;
        }
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> unpublishable_reason(const BasicProperties& properties) {
    for (const auto& [name, text] : text_properties(properties)) {
        if (*text && (*text)->size() > kMaxShortStringBytes) {
            return "properties." + std::string(name) + ": " + std::to_string((*text)->size()) +
                   " bytes; AMQP holds at most " + std::to_string(kMaxShortStringBytes);
        }
    }
    if (!properties.headers) return std::nullopt;
    std::vector<std::string_view> path{"headers"};
    return long_name_in(*properties.headers, path);
}

std::size_t encoded_size(const BasicProperties& properties) {
    std::size_t size = 2;  // the property flags
    for (const auto& [name, text] : text_properties(properties)) {
        if (*text) size += 1 + (*text)->size();
    }
    if (properties.headers) size += encoded_size(*properties.headers);
    if (properties.delivery_mode) size += 1;
    if (properties.priority) size += 1;
    if (properties.timestamp) size += 8;
    return size;
}

namespace {
constexpr std::size_t kMaxDroppedNamed = 10;
constexpr std::size_t kMaxNameQuoted = 64;
}  // namespace

std::vector<std::pair<std::string, std::size_t>> drop_largest_headers(
    BasicProperties& properties, std::size_t max_bytes, std::string_view keep_prefix) {
    std::vector<std::pair<std::string, std::size_t>> dropped;
    const auto limit = max_bytes > kDroppedHeadersNoteBytes ? max_bytes - kDroppedHeadersNoteBytes : 0;
    auto size = encoded_size(properties);
    if (size <= max_bytes || !properties.headers) return dropped;
    std::vector<std::pair<std::size_t, std::string>> by_size;
    for (const auto& [name, value] : *properties.headers) {
        if (!name.starts_with(keep_prefix)) by_size.emplace_back(encoded_header_size(name, value), name);
    }
    std::sort(by_size.rbegin(), by_size.rend());
    for (const auto& [bytes, name] : by_size) {
        if (size <= limit) break;
        remove_header(properties, name);
        size = encoded_size(properties);
        dropped.emplace_back(name, bytes);
    }
    return dropped;
}

std::string describe_dropped_headers(const std::vector<std::pair<std::string, std::size_t>>& dropped) {
    std::string note = "headers dropped to fit the frame size:";
    for (std::size_t i = 0; i < dropped.size() && i < kMaxDroppedNamed; ++i) {
        note += (i == 0 ? " " : ", ") + quote_value(dropped[i].first, kMaxNameQuoted) + " (" +
                std::to_string(dropped[i].second) + " bytes)";
    }
    if (dropped.size() > kMaxDroppedNamed) {
        note += " and " + std::to_string(dropped.size() - kMaxDroppedNamed) + " more";
    }
    return note;
}

}  // namespace hourglass
