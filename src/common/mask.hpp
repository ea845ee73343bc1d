// Hides passwords in connection strings before they reach a log, an error message or
// /metrics (reference §9: secrets are never logged). Handles URIs (scheme://user:password@host,
// also with unencoded '/' or '@' in the password, or a mistyped scheme such as "scheme:/" or
// none at all) and libpq keyword strings (password=secret, password='a \' b', ?password=secret
// in a URI query).
//
// Libraries sometimes quote a connection string back in their error messages (libpq does for
// one it cannot parse), so the passwords themselves can also be removed from any text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hourglass {

std::string mask_secrets(std::string_view connection_string);

// The passwords in a connection string: as written and, where that differs, percent-decoded
// or unquoted.
std::vector<std::string> secrets_in(std::string_view connection_string);

// `text` with every occurrence of each secret replaced by "***".
std::string hide_secrets(std::string text, const std::vector<std::string>& secrets);

}  // namespace hourglass
