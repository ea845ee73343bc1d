#include "common/mask.hpp"

#include <regex>

namespace hourglass {

namespace {

// scheme://user:password@rest -> scheme://user:***@rest. The password ends at the last '@',
// so '/', '?' and '@' inside it (invalid, but typed by people) stay hidden; an '@' further
// on (in a vhost or query) only hides more than needed, never less.
std::string mask_uri_userinfo(std::string text) {
    const auto scheme_end = text.find("://");
    if (scheme_end == std::string::npos) return text;
    const auto authority = scheme_end + 3;
    const auto at = text.rfind('@');
    if (at == std::string::npos || at < authority) return text;
    const auto colon = text.find(':', authority);
    if (colon == std::string::npos || colon > at) return text;
    return text.substr(0, colon + 1) + "***" + text.substr(at);
}

}  // namespace

std::string mask_secrets(std::string_view connection_string) {
    // password=value, password = 'quoted \' value', or &password=value in a URI query.
    static const std::regex keyword_password(R"((password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+))",
                                             std::regex::icase);
    return std::regex_replace(mask_uri_userinfo(std::string(connection_string)), keyword_password,
                              "$1***");
}

}  // namespace hourglass
