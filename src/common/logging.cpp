#include "common/logging.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/mask.hpp"
#include "hourglass/time.hpp"

namespace hourglass::logging {

namespace {

// What configure() set, for report_fatal().
Settings& current_settings() {
    static Settings settings;
    return settings;
}

std::string first_line(std::string_view text) {
    auto line = text.substr(0, text.find('\n'));
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) {
        line.remove_suffix(1);
    }
    return std::string(line);
}

}  // namespace

const std::vector<std::string>& level_names() {
    static const std::vector<std::string> names = {"trace", "debug",    "info", "warn",
                                                   "error", "critical", "off"};
    return names;
}

Format parse_format(std::string_view name) {
    if (name == "text") return Format::text;
    if (name == "json") return Format::json;
    throw std::invalid_argument("log format '" + std::string(name) + "' is not text or json");
}

void JsonLineFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
    const auto level = spdlog::level::to_string_view(msg.level);
    const nlohmann::ordered_json line = {
        // keeps time, level, message in this order
        {"time", format_rfc3339_ms(std::chrono::time_point_cast<Milliseconds>(msg.time))},
        {"level", std::string(level.data(), level.size())},
        {"message", std::string(msg.payload.data(), msg.payload.size())}};
    // Invalid UTF-8 in a message (a job id quoted in an error, say) becomes U+FFFD.
    const auto text = line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    dest.append(text.data(), text.data() + text.size());
    dest.push_back('\n');
}

std::unique_ptr<spdlog::formatter> JsonLineFormatter::clone() const {
    return std::make_unique<JsonLineFormatter>();
}

SecretHidingFormatter::SecretHidingFormatter(std::unique_ptr<spdlog::formatter> inner,
                                             std::vector<std::string> secrets)
    : inner_(std::move(inner)), secrets_(std::move(secrets)) {}

void SecretHidingFormatter::format(const spdlog::details::log_msg& msg,
                                   spdlog::memory_buf_t& dest) {
    if (secrets_.empty()) return inner_->format(msg, dest);
    const auto clean = hide_secrets(std::string(msg.payload.data(), msg.payload.size()), secrets_);
    auto copy = msg;
    copy.payload = spdlog::string_view_t(clean.data(), clean.size());
    inner_->format(copy, dest);
}

std::unique_ptr<spdlog::formatter> SecretHidingFormatter::clone() const {
    return std::make_unique<SecretHidingFormatter>(inner_->clone(), secrets_);
}

void configure(const Settings& settings) {
    current_settings() = settings;
    auto logger =
        std::make_shared<spdlog::logger>("", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    std::unique_ptr<spdlog::formatter> formatter;
    if (settings.format == Format::json) {
        formatter = std::make_unique<JsonLineFormatter>();
    } else {
        formatter = std::make_unique<spdlog::pattern_formatter>("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
    }
    logger->set_formatter(
        std::make_unique<SecretHidingFormatter>(std::move(formatter), settings.secrets));
    logger->set_level(spdlog::level::from_str(settings.level));
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(std::move(logger));
}

void report_fatal(std::string_view message) {
    const auto& settings = current_settings();
    const auto line = first_line(hide_secrets(std::string(message), settings.secrets));
    if (settings.format == Format::json) {
        spdlog::error("{}", line);
    } else {
        std::fprintf(stderr, "hourglass: %s\n", line.c_str());
    }
}

}  // namespace hourglass::logging
