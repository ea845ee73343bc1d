// Logging (reference §9: secrets are never logged). spdlog's default logger writes one line per
// event to stderr, as text or as JSON lines ({"time", "level", "message"}), and every message first
// has the configured secrets (the passwords of the connection strings) replaced by "***".
#pragma once

#include <spdlog/formatter.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hourglass::logging {

enum class Format { text, json };

struct Settings {
    std::string level = "info";  // trace, debug, info, warn, error, critical, off
    Format format = Format::text;
    std::vector<std::string> secrets;  // removed from every message (see secrets_in)
};

// Names accepted by Settings::level and --log-format.
const std::vector<std::string>& level_names();
Format parse_format(std::string_view name);  // "text" or "json"; throws std::invalid_argument

// Replaces spdlog's default logger. Call once, before any thread logs.
void configure(const Settings& settings);

// A fatal error as one line on stderr: "hourglass: <message>" as text, or a JSON log line at
// level error. Secrets are removed, and only the first line is kept (libpq adds hints and a
// caret on further lines).
void report_fatal(std::string_view message);

// {"time":"2026-11-22T09:30:00.250Z","level":"info","message":"..."}, JSON-escaped, one per line.
class JsonLineFormatter final : public spdlog::formatter {
public:
    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
    std::unique_ptr<spdlog::formatter> clone() const override;
};

// Removes secrets from the message, then formats it with the wrapped formatter.
class SecretHidingFormatter final : public spdlog::formatter {
public:
    SecretHidingFormatter(std::unique_ptr<spdlog::formatter> inner,
                          std::vector<std::string> secrets);
    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
    std::unique_ptr<spdlog::formatter> clone() const override;

private:
    std::unique_ptr<spdlog::formatter> inner_;
    std::vector<std::string> secrets_;
};

}  // namespace hourglass::logging
