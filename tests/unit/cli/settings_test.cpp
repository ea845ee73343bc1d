// The settings table (src/cli/settings.hpp): docs/reference.md's "Settings" table is written
// from it (regenerate it with HOURGLASS_UPDATE_DOCS=1 build/tests/hourglass_unit_tests
// --gtest_filter='Settings.*'), every default is within its bounds, and the names follow one rule.
#include "cli/settings.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "cli/options.hpp"
#include "support/build_paths.hpp"

namespace hourglass::cli {
namespace {

constexpr const char* kBegin = "<!-- settings: written by src/cli/settings.cpp -->\n";
constexpr const char* kEnd = "<!-- settings: end -->\n";

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

TEST(Settings, the_reference_table_is_the_one_in_code) {
    const auto path = testing::source_dir() + "/docs/reference.md";
    auto reference = read_file(path);
    const auto begin = reference.find(kBegin);
    const auto end = reference.find(kEnd);
    ASSERT_NE(begin, std::string::npos) << path << " has no line " << kBegin;
    ASSERT_NE(end, std::string::npos) << path << " has no line " << kEnd;
    const auto from = begin + std::string(kBegin).size();
    const auto written = reference.substr(from, end - from);
    if (written != settings_markdown() && std::getenv("HOURGLASS_UPDATE_DOCS")) {
        reference.replace(from, end - from, settings_markdown());
        std::ofstream(path) << reference;
        return;
    }
    EXPECT_EQ(written, settings_markdown())
        << "docs/reference.md's Settings table differs from src/cli/settings.cpp; write it with "
           "HOURGLASS_UPDATE_DOCS=1 build/tests/hourglass_unit_tests --gtest_filter='Settings.*'";
}

TEST(Settings, every_duration_default_is_within_its_bounds) {
    for (const auto* option : {&kHorizonOption, &kLeaseOption, &kResendAfterOption, &kMaxDelayOption,
                               &kStopTimeoutOption, &kRetentionOption, &kMaxClockOffsetOption}) {
        const auto& row = setting(option->flag);
        EXPECT_NO_THROW(parse_duration(*option, row.default_value)) << option->flag;
        EXPECT_EQ(row.bounds, format_duration(option->min) + "–" + format_duration(option->max));
    }
}

TEST(Settings, every_flag_is_once_in_the_table_with_its_variable) {
    std::set<std::string_view> flags;
    for (const auto& row : settings()) {
        EXPECT_TRUE(flags.insert(row.flag).second) << row.flag << " twice";
        EXPECT_FALSE(row.help.empty()) << row.flag;
        EXPECT_FALSE(row.meaning.empty()) << row.flag;
        if (row.range) {
            EXPECT_GE(std::stoull(row.default_value), row.range->min) << row.flag;
            EXPECT_LE(std::stoull(row.default_value), row.range->max) << row.flag;
        }
    }
    EXPECT_EQ(environment_variable("--max-in-memory-runs"), "HOURGLASS_MAX_IN_MEMORY_RUNS");
    EXPECT_THROW(setting("--no-such-setting"), std::out_of_range);
}

TEST(Settings, help_shows_the_bounds_and_the_default) {
    EXPECT_EQ(help_text(setting("--horizon")),
              "How far ahead runs are handed to the delay queues (1s–1h, default 60s)");
    EXPECT_EQ(help_text(setting("--amqp-key")), "PEM private key of --amqp-cert");
}

TEST(FormatDuration, writes_each_duration_in_its_largest_whole_unit_and_parses_back) {
    EXPECT_EQ(format_duration(Milliseconds{250}), "250ms");
    EXPECT_EQ(format_duration(Milliseconds{1000}), "1s");
    EXPECT_EQ(format_duration(Milliseconds{60000}), "60s");
    EXPECT_EQ(format_duration(Milliseconds{600000}), "10m");
    EXPECT_EQ(format_duration(Milliseconds{3600000}), "1h");
    EXPECT_EQ(format_duration(Milliseconds{7LL * 86400000}), "7d");
    for (const long long ms : {1LL, 999LL, 1500LL, 61000LL, 5400000LL, 90000000LL}) {
        EXPECT_EQ(parse_duration(format_duration(Milliseconds{ms})), Milliseconds{ms}) << ms;
    }
}

}  // namespace
}  // namespace hourglass::cli
