// Lossless conversion of AMQP basic properties to JSON, for `hourglass.jobs.properties`.
//
// Operators read the column with SQL, so values stay readable: strings are JSON strings,
// and every header keeps its AMQP type as {"t": "<type>", "v": <value>} (for example
// {"t":"i32","v":5}). Bytes that are not valid UTF-8 (or contain NUL, which jsonb cannot
// hold) are stored as {"b64": "..."}. properties_from_json(properties_to_json(p)) == p.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "hourglass/message.hpp"

namespace hourglass {

nlohmann::json properties_to_json(const BasicProperties& properties);
// Returns nothing if the JSON does not have the shape properties_to_json produces.
std::optional<BasicProperties> properties_from_json(const nlohmann::json& json) noexcept;

// Whether the bytes are valid UTF-8 without NUL characters (what PostgreSQL text accepts).
bool is_storable_text(std::string_view bytes) noexcept;

std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace hourglass
