// Hides passwords in connection strings before they reach a log, an error message or
// /metrics (SPEC §8: secrets are never logged). Handles URIs (scheme://user:password@host,
// also with unencoded '/' or '@' in the password) and libpq keyword strings
// (password=secret, password='a \' b', ?password=secret in a URI query).
#pragma once

#include <string>
#include <string_view>

namespace hourglass {

std::string mask_secrets(std::string_view connection_string);

}  // namespace hourglass
