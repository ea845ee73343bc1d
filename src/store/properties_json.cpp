#include "hourglass/properties_json.hpp"

#include <openssl/evp.h>

#include <cmath>
#include <limits>

namespace hourglass {

using nlohmann::json;

bool is_storable_text(std::string_view bytes) noexcept {
    std::size_t i = 0;
    while (i < bytes.size()) {
        const auto c = static_cast<unsigned char>(bytes[i]);
        if (c == 0) return false;
        std::size_t length = 0;
        std::uint32_t code = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            length = 2;
            code = c & 0x1Fu;
        } else if ((c & 0xF0) == 0xE0) {
            length = 3;
            code = c & 0x0Fu;
        } else if ((c & 0xF8) == 0xF0) {
            length = 4;
            code = c & 0x07u;
        } else {
            return false;
        }
        if (i + length > bytes.size()) return false;
        for (std::size_t k = 1; k < length; ++k) {
            const auto continuation = static_cast<unsigned char>(bytes[i + k]);
            if ((continuation & 0xC0) != 0x80) return false;
            code = (code << 6) | (continuation & 0x3Fu);
        }
        // Reject overlong forms, surrogates and values past U+10FFFF.
        static constexpr std::uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
        if (code < kMinimum[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
            return false;
        }
        i += length;
    }
    return true;
}

std::string base64_encode(std::string_view bytes) {
    std::string out(4 * ((bytes.size() + 2) / 3), '\0');
    const int written =
        EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                        reinterpret_cast<const unsigned char*>(bytes.data()),
                        static_cast<int>(bytes.size()));
    out.resize(static_cast<std::size_t>(written));
    return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
    if (text.size() % 4 != 0) return std::nullopt;
    std::string out(3 * (text.size() / 4), '\0');
    const int written = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                        reinterpret_cast<const unsigned char*>(text.data()),
                                        static_cast<int>(text.size()));
    if (written < 0) return std::nullopt;
    // EVP_DecodeBlock counts the padding as zero bytes; drop them.
    std::size_t padding = 0;
    if (!text.empty() && text.back() == '=') ++padding;
    if (text.size() > 1 && text[text.size() - 2] == '=') ++padding;
    out.resize(static_cast<std::size_t>(written) - padding);
    return out;
}

namespace {

json bytes_to_json(const std::string& bytes) {
    if (is_storable_text(bytes)) return bytes;
    return json{{"b64", base64_encode(bytes)}};
}

// Throws on a malformed document; the public entry point turns that into nullopt.
std::string bytes_from_json(const json& value) {
    if (value.is_string()) return value.get<std::string>();
    auto decoded = base64_decode(value.at("b64").get<std::string>());
    if (!decoded) throw std::invalid_argument("bad base64");
    return *decoded;
}

json table_to_json(const FieldTable& table);

json value_to_json(const FieldValue& field) {
    return std::visit(
        [](const auto& v) -> json {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, Void>) return {{"t", "void"}};
            else if constexpr (std::is_same_v<T, bool>) return {{"t", "bool"}, {"v", v}};
            else if constexpr (std::is_same_v<T, std::int8_t>) return {{"t", "i8"}, {"v", v}};
            else if constexpr (std::is_same_v<T, std::uint8_t>) return {{"t", "u8"}, {"v", v}};
            else if constexpr (std::is_same_v<T, std::int16_t>) return {{"t", "i16"}, {"v", v}};
            else if constexpr (std::is_same_v<T, std::uint16_t>) return {{"t", "u16"}, {"v", v}};
            else if constexpr (std::is_same_v<T, std::int32_t>) return {{"t", "i32"}, {"v", v}};
            else if constexpr (std::is_same_v<T, std::uint32_t>) return {{"t", "u32"}, {"v", v}};
            else if constexpr (std::is_same_v<T, std::int64_t>) return {{"t", "i64"}, {"v", v}};
            else if constexpr (std::is_same_v<T, std::uint64_t>) return {{"t", "u64"}, {"v", v}};
            else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
                const char* type = std::is_same_v<T, float> ? "f32" : "f64";
                // JSON has no NaN or infinity: keep those as text.
                if (std::isfinite(v)) return {{"t", type}, {"v", v}};
                return {{"t", type}, {"s", std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity")}};
            } else if constexpr (std::is_same_v<T, Decimal>)
                return {{"t", "decimal"}, {"v", v.value}, {"decimals", v.decimals}};
            else if constexpr (std::is_same_v<T, std::string>)
                return {{"t", "str"}, {"v", bytes_to_json(v)}};
            else if constexpr (std::is_same_v<T, ByteArray>)
                return {{"t", "bytes"}, {"v", bytes_to_json(v.bytes)}};
            else if constexpr (std::is_same_v<T, Timestamp>)
                return {{"t", "timestamp"}, {"v", v.seconds}};
            else if constexpr (std::is_same_v<T, FieldArray>) {
                json items = json::array();
                for (const auto& item : v) items.push_back(value_to_json(item));
                return {{"t", "array"}, {"v", items}};
            } else {
                return {{"t", "table"}, {"v", table_to_json(v)}};
            }
        },
        field.value);
}

// Tables are stored as an array of [key, value] pairs: keys may repeat and order matters.
json table_to_json(const FieldTable& table) {
    json entries = json::array();
    for (const auto& [key, value] : table) {
        entries.push_back(json::array({bytes_to_json(key), value_to_json(value)}));
    }
    return entries;
}

FieldTable table_from_json(const json& entries, int depth);

template <typename T>
T checked_number(const json& value) {
    if (!value.is_number()) throw std::invalid_argument("not a number");
    if constexpr (std::is_floating_point_v<T>) {
        return value.get<T>();
    } else {
        if (value.is_number_float()) throw std::invalid_argument("not an integer");
        if (value.is_number_unsigned()) {
            const auto u = value.get<std::uint64_t>();
            if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
                throw std::out_of_range("too large");
            return static_cast<T>(u);
        }
        const auto i = value.get<std::int64_t>();
        if (i < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
            (i > 0 && static_cast<std::uint64_t>(i) >
                          static_cast<std::uint64_t>(std::numeric_limits<T>::max())))
            throw std::out_of_range("out of range");
        return static_cast<T>(i);
    }
}

template <typename T>
T floating_from_json(const json& field) {
    if (field.contains("s")) {
        const auto text = field.at("s").get<std::string>();
        if (text == "NaN") return std::numeric_limits<T>::quiet_NaN();
        if (text == "Infinity") return std::numeric_limits<T>::infinity();
        if (text == "-Infinity") return -std::numeric_limits<T>::infinity();
        throw std::invalid_argument("bad float");
    }
    return checked_number<T>(field.at("v"));
}

FieldValue value_from_json(const json& field, int depth) {
    if (depth > 128) throw std::invalid_argument("too deep");
    const auto type = field.at("t").get<std::string>();
    if (type == "void") return Void{};
    // Non-finite floats are stored as text under "s", without "v".
    if (type == "f32") return floating_from_json<float>(field);
    if (type == "f64") return floating_from_json<double>(field);
    const json& v = field.at("v");
    if (type == "bool") return v.get<bool>();
    if (type == "i8") return checked_number<std::int8_t>(v);
    if (type == "u8") return checked_number<std::uint8_t>(v);
    if (type == "i16") return checked_number<std::int16_t>(v);
    if (type == "u16") return checked_number<std::uint16_t>(v);
    if (type == "i32") return checked_number<std::int32_t>(v);
    if (type == "u32") return checked_number<std::uint32_t>(v);
    if (type == "i64") return checked_number<std::int64_t>(v);
    if (type == "u64") return checked_number<std::uint64_t>(v);
    if (type == "decimal")
        return Decimal{checked_number<std::uint8_t>(field.at("decimals")),
                       checked_number<std::uint32_t>(v)};
    if (type == "str") return bytes_from_json(v);
    if (type == "bytes") return ByteArray{bytes_from_json(v)};
    if (type == "timestamp") return Timestamp{checked_number<std::uint64_t>(v)};
    if (type == "array") {
        if (!v.is_array()) throw std::invalid_argument("array expected");
        FieldArray items;
        for (const auto& item : v) items.push_back(value_from_json(item, depth + 1));
        return items;
    }
    if (type == "table") return table_from_json(v, depth + 1);
    throw std::invalid_argument("unknown field type");
}

FieldTable table_from_json(const json& entries, int depth) {
    if (!entries.is_array()) throw std::invalid_argument("table expected");
    FieldTable table;
    for (const auto& entry : entries) {
        if (!entry.is_array() || entry.size() != 2) throw std::invalid_argument("bad entry");
        table.emplace_back(bytes_from_json(entry[0]), value_from_json(entry[1], depth));
    }
    return table;
}

}  // namespace

json properties_to_json(const BasicProperties& p) {
    json out = json::object();
    auto put_bytes = [&](const char* name, const std::optional<std::string>& field) {
        if (field) out[name] = bytes_to_json(*field);
    };
    put_bytes("content_type", p.content_type);
    put_bytes("content_encoding", p.content_encoding);
    if (p.headers) out["headers"] = table_to_json(*p.headers);
    if (p.delivery_mode) out["delivery_mode"] = *p.delivery_mode;
    if (p.priority) out["priority"] = *p.priority;
    put_bytes("correlation_id", p.correlation_id);
    put_bytes("reply_to", p.reply_to);
    put_bytes("expiration", p.expiration);
    put_bytes("message_id", p.message_id);
    if (p.timestamp) out["timestamp"] = *p.timestamp;
    put_bytes("type", p.type);
    put_bytes("user_id", p.user_id);
    put_bytes("app_id", p.app_id);
    put_bytes("cluster_id", p.cluster_id);
    return out;
}

std::optional<BasicProperties> properties_from_json(const json& in) noexcept {
    try {
        if (!in.is_object()) return std::nullopt;
        BasicProperties p;
        auto get_bytes = [&](const char* name, std::optional<std::string>& field) {
            if (in.contains(name)) field = bytes_from_json(in.at(name));
        };
        get_bytes("content_type", p.content_type);
        get_bytes("content_encoding", p.content_encoding);
        if (in.contains("headers")) p.headers = table_from_json(in.at("headers"), 0);
        if (in.contains("delivery_mode"))
            p.delivery_mode = checked_number<std::uint8_t>(in.at("delivery_mode"));
        if (in.contains("priority")) p.priority = checked_number<std::uint8_t>(in.at("priority"));
        get_bytes("correlation_id", p.correlation_id);
        get_bytes("reply_to", p.reply_to);
        get_bytes("expiration", p.expiration);
        get_bytes("message_id", p.message_id);
        if (in.contains("timestamp"))
            p.timestamp = checked_number<std::uint64_t>(in.at("timestamp"));
        get_bytes("type", p.type);
        get_bytes("user_id", p.user_id);
        get_bytes("app_id", p.app_id);
        get_bytes("cluster_id", p.cluster_id);
        return p;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace hourglass
