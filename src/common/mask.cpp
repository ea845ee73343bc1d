#include "common/mask.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <regex>

namespace hourglass {

namespace {

constexpr std::string_view kMask = "***";

struct Span {
    std::size_t begin = 0;
    std::size_t end = 0;
};

// The password of scheme://user:password@rest. It ends at the last '@', so '/', '?' and '@'
// inside it (invalid, but typed by people) stay hidden; an '@' further on (in a vhost or query)
// only hides more than needed, never less. A mistyped "scheme:/" or a missing scheme still has
// its user:password@ recognised.
std::optional<Span> uri_password(std::string_view text) {
    const auto at = text.rfind('@');
    if (at == std::string_view::npos) return std::nullopt;
    std::size_t userinfo = 0;
    if (const auto separator = text.find("://");
        separator != std::string_view::npos && separator < at) {
        userinfo = separator + 3;
    } else {
        static const std::regex scheme(R"(^[A-Za-z][A-Za-z0-9+.-]*:/+)");
        std::match_results<std::string_view::const_iterator> match;
        if (std::regex_search(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), match,
                              scheme)) {
            userinfo = static_cast<std::size_t>(match.length(0));
        }
    }
    const auto colon = text.find(':', userinfo);
    if (colon == std::string_view::npos || colon > at) return std::nullopt;
    return Span{colon + 1, at};
}

// password=value, password = 'quoted \' value', or &password=value in a URI query; group 2 is
// the value.
const std::regex& keyword_password() {
    static const std::regex pattern(R"((password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+))",
                                    std::regex::icase);
    return pattern;
}

std::string percent_decoded(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size() &&
            std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
            std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
            out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
            i += 2;
        } else {
            out += text[i];
        }
    }
    return out;
}

// 'a \' b' -> a ' b
std::string unquoted(std::string_view value) {
    if (value.size() < 2 || value.front() != '\'' || value.back() != '\'')
        return std::string(value);
    std::string out;
    for (std::size_t i = 1; i + 1 < value.size(); ++i) {
        if (value[i] == '\\' && i + 2 < value.size()) ++i;
        out += value[i];
    }
    return out;
}

}  // namespace

std::string mask_secrets(std::string_view connection_string) {
    std::string text(connection_string);
    if (const auto password = uri_password(text)) {
        text.replace(password->begin, password->end - password->begin, kMask);
    }
    return std::regex_replace(text, keyword_password(), "$1***");
}

std::vector<std::string> secrets_in(std::string_view connection_string) {
    std::vector<std::string> secrets;
    auto add = [&](std::string secret) {
        if (!secret.empty() && std::find(secrets.begin(), secrets.end(), secret) == secrets.end()) {
            secrets.push_back(std::move(secret));
        }
    };
    if (const auto password = uri_password(connection_string)) {
        const auto raw = connection_string.substr(password->begin, password->end - password->begin);
        add(std::string(raw));
        add(percent_decoded(raw));
    }
    const std::string text(connection_string);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), keyword_password());
         it != std::sregex_iterator(); ++it) {
        const auto value = (*it)[2].str();
        add(value);
        add(unquoted(value));
        add(percent_decoded(value));
    }
    return secrets;
}

std::string hide_secrets(std::string text, const std::vector<std::string>& secrets) {
    // Longest first, so a secret that contains another is replaced whole.
    auto ordered = secrets;
    std::sort(ordered.begin(), ordered.end(),
              [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
    for (const auto& secret : ordered) {
        if (secret.empty()) continue;
        for (auto at = text.find(secret); at != std::string::npos;
             at = text.find(secret, at + kMask.size())) {
            text.replace(at, secret.size(), kMask);
        }
    }
    return text;
}

}  // namespace hourglass
