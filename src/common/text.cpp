#include "common/text.hpp"

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

}  // namespace hourglass
