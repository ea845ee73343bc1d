// How a job travels to PostgreSQL: one JSON object per row, many rows as one parameter of a
// prepared statement (never spliced into SQL). Pure, so the fuzz target of the ingest path can
// check that whatever the parser accepts encodes (valid UTF-8, times PostgreSQL stores).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "hourglass/command.hpp"

namespace hourglass::store {

// The row of hourglass.jobs for a schedule (body as base64, properties as JSON) of `owner`.
nlohmann::json job_row(const ScheduleCommand& job, const std::string& owner);
// An RFC 3339 time with milliseconds, or null.
nlohmann::json optional_time(const std::optional<TimePoint>& time);

}  // namespace hourglass::store
