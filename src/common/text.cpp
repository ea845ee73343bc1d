#include "common/text.hpp"

#include <optional>

namespace hourglass {

namespace {

void append_escaped(std::string& out, std::string_view bytes, std::size_t max_bytes,
                    bool escape_quote) {
    static constexpr char kHex[] = "0123456789abcdef";
    for (std::size_t i = 0; i < bytes.size() && i < max_bytes; ++i) {
        const auto c = static_cast<unsigned char>(bytes[i]);
        if (c >= 0x20 && c < 0x7f && c != '\\' && !(escape_quote && c == '\'')) {
            out += static_cast<char>(c);
        } else {
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 0xf];
        }
    }
    if (bytes.size() > max_bytes) out += "...";
}

}  // namespace

std::string quote_value(std::string_view bytes, std::size_t max_bytes) {
    std::string out = "'";
    append_escaped(out, bytes, max_bytes, /*escape_quote=*/true);
    return out + "'";
}

std::string printable(std::string_view text, std::size_t max_bytes) {
    std::string out;
    append_escaped(out, text, max_bytes, /*escape_quote=*/false);
    return out;
}

namespace {

// The code point of one well-formed UTF-8 sequence.
char32_t decode(std::string_view sequence) {
    const auto byte = [&](std::size_t i) { return static_cast<char32_t>(static_cast<unsigned char>(sequence[i])); };
    switch (sequence.size()) {
        case 1: return byte(0);
        case 2: return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
        case 3: return ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
        default:
            return ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) |
                   (byte(3) & 0x3F);
    }
}

std::string encode(char32_t code_point) {
    std::string out;
    const auto put = [&](char32_t bits) { out.push_back(static_cast<char>(bits)); };
    if (code_point < 0x80) {
        put(code_point);
    } else if (code_point < 0x800) {
        put(0xC0 | (code_point >> 6));
        put(0x80 | (code_point & 0x3F));
    } else if (code_point < 0x10000) {
        put(0xE0 | (code_point >> 12));
        put(0x80 | ((code_point >> 6) & 0x3F));
        put(0x80 | (code_point & 0x3F));
    } else {
        put(0xF0 | (code_point >> 18));
        put(0x80 | ((code_point >> 12) & 0x3F));
        put(0x80 | ((code_point >> 6) & 0x3F));
        put(0x80 | (code_point & 0x3F));
    }
    return out;
}

}  // namespace

std::optional<std::string> prefix_upper_bound(std::string_view prefix) {
    std::string bound(prefix);
    while (!bound.empty()) {
        auto start = bound.size() - 1;
        while (start > 0 && (static_cast<unsigned char>(bound[start]) & 0xC0) == 0x80) --start;
        const auto last = decode(std::string_view(bound).substr(start));
        bound.resize(start);
        if (last < 0x10FFFF) {
            // UTF-8 orders like code points, and no sequence is a prefix of another.
            const char32_t next = last + 1 == 0xD800 ? 0xE000 : last + 1;
            return bound + encode(next);
        }
    }
    return std::nullopt;
}

}  // namespace hourglass
