// Logging (src/common/logging.hpp): JSON lines are valid JSON with time, level and message, and
// configured secrets never reach a formatted line, in either format.
#include "common/logging.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/pattern_formatter.h>

#include <nlohmann/json.hpp>

#include "common/mask.hpp"

namespace hourglass::logging {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

std::string format_with(spdlog::formatter& formatter, spdlog::level::level_enum level,
                        const std::string& message) {
    const spdlog::details::log_msg msg("", level,
                                       spdlog::string_view_t(message.data(), message.size()));
    spdlog::memory_buf_t buffer;
    formatter.format(msg, buffer);
    return std::string(buffer.data(), buffer.size());
}

TEST(JsonLineFormatter, writes_one_json_object_per_line_with_time_level_message) {
    JsonLineFormatter formatter;
    const auto line = format_with(formatter, spdlog::level::warn, "ingest: lost connection");
    ASSERT_FALSE(line.empty());
    EXPECT_EQ(line.back(), '\n');
    EXPECT_EQ(line.find('\n'), line.size() - 1);
    const auto json = nlohmann::json::parse(line);
    EXPECT_EQ(json.size(), 3u);
    EXPECT_EQ(json["level"], "warning");
    EXPECT_EQ(json["message"], "ingest: lost connection");
    EXPECT_THAT(json["time"].get<std::string>(),
                MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{3}Z"));
    EXPECT_LT(line.find("\"time\""), line.find("\"level\"")) << "field order";
    EXPECT_LT(line.find("\"level\""), line.find("\"message\"")) << "field order";
}

TEST(JsonLineFormatter, escapes_quotes_newlines_control_characters_and_bad_utf8) {
    JsonLineFormatter formatter;
    const std::string message = "id \"a\\b\"\nnext\tline \x01 \xff end";
    const auto line = format_with(formatter, spdlog::level::info, message);
    EXPECT_EQ(line.find('\n'), line.size() - 1) << "a message with newlines stays one line";
    const auto json = nlohmann::json::parse(line);
    EXPECT_THAT(json["message"].get<std::string>(), HasSubstr("id \"a\\b\"\nnext\tline \x01 "));
    EXPECT_THAT(json["message"].get<std::string>(), HasSubstr("\xEF\xBF\xBD end")) << "U+FFFD";
}

TEST(SecretHidingFormatter, hides_secrets_in_text_and_json) {
    const std::vector<std::string> secrets = secrets_in("amqp://hourglass:s3cr%40t@rabbit/%2f");
    const std::string message = "connection to amqp://hourglass:s3cr%40t@rabbit failed (s3cr@t)";
    SecretHidingFormatter text(std::make_unique<spdlog::pattern_formatter>("%v"), secrets);
    SecretHidingFormatter json(std::make_unique<JsonLineFormatter>(), secrets);
    for (auto* formatter :
         {static_cast<spdlog::formatter*>(&text), static_cast<spdlog::formatter*>(&json)}) {
        const auto line = format_with(*formatter, spdlog::level::info, message);
        EXPECT_THAT(line, Not(HasSubstr("s3cr")));
        EXPECT_THAT(line, HasSubstr("hourglass:***@rabbit"));
        const auto clone = formatter->clone();
        EXPECT_THAT(format_with(*clone, spdlog::level::info, message), Not(HasSubstr("s3cr")));
    }
}

TEST(ParseFormat, text_and_json_only) {
    EXPECT_EQ(parse_format("text"), Format::text);
    EXPECT_EQ(parse_format("json"), Format::json);
    EXPECT_THROW(parse_format("xml"), std::invalid_argument);
}

}  // namespace
}  // namespace hourglass::logging
