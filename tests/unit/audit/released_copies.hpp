// Released copies as the audit queue delivers them, for the audit's unit tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hourglass/message.hpp"

namespace hourglass::audit::testing {

// One x-death entry of a copy the broker dead-lettered `seconds` after the epoch (its `time`
// is a whole-second AMQP timestamp).
inline FieldTable death(std::uint64_t seconds) {
    return FieldTable{{"count", std::int64_t{1}},
                      {"reason", std::string("expired")},
                      {"queue", std::string("hourglass.delay.ttl-2000ms")},
                      {"time", Timestamp{seconds}}};
}

// A copy with hourglass's headers for job `id` (run 1, due `due`) and the given x-death
// entries; without `with_headers`, a stray message with none of them.
inline Message released_copy(const std::string& id, FieldArray deaths = {},
                             bool with_headers = true,
                             const std::string& due = "2026-11-25T12:00:00.000Z") {
    Message message;
    FieldTable headers;
    if (with_headers) {
        headers.emplace_back("x-hourglass-id", id);
        headers.emplace_back("x-hourglass-due", due);
        headers.emplace_back("x-hourglass-run", std::int64_t{1});
    }
    if (!deaths.empty()) headers.emplace_back("x-death", std::move(deaths));
    message.properties.headers = std::move(headers);
    return message;
}

}  // namespace hourglass::audit::testing
