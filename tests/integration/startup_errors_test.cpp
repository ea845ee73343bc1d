// A start that cannot go on (reference §9): a setting out of its bounds is a usage error naming
// it, and every other start-up error is one clear line and a non-zero exit.
#include <gmock/gmock.h>

#include <sstream>

#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

class StartupErrors : public HourglassTest {};

TEST_F(StartupErrors, option_values_out_of_bounds_are_usage_errors_naming_the_option) {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--console-token", "guessable"}, "--console-token: a console token needs at least 16 characters"},
        {{"--max-unconfirmed", "0"}, "--max-unconfirmed: Value 0 not in range 1 to 65536"},
        {{"--delay-lanes", "17"}, "--delay-lanes: Value 17 not in range 1 to 16"},
        {{"--max-in-memory-runs", "999"},
         "--max-in-memory-runs: Value 999 not in range 1000 to 1000000"},
        {{"--max-burst-runs", "1000001"},
         "--max-burst-runs: Value 1000001 not in range 0 to 1000000"},
    };
    for (const auto& [options, expected] : cases) {
        auto arguments = options;
        arguments.insert(arguments.begin(), "run");
        const auto result = run_cli(arguments, 20s);
        EXPECT_NE(result.exit_code, 0) << expected;
        EXPECT_NE(result.exit_code, -1) << "it hung";
        EXPECT_THAT(result.err, HasSubstr(expected));
    }
}

TEST_F(StartupErrors, startup_errors_are_one_clear_line_and_a_non_zero_exit) {
    const auto database = pg_url_.substr(pg_url_.find('@'));
    struct Case {
        std::string what;
        std::vector<std::string> arguments;
        std::string expected;
    };
    const std::vector<Case> cases = {
        {"unreachable broker",
         {"--amqp-url", "amqp://u:p@127.0.0.1:1/%2f", "--pg-url", pg_url_},
         "cannot connect to RabbitMQ at 127.0.0.1:1"},
        {"wrong database password",
         {"--pg-url", "postgresql://hourglass:nope" + database},
         "password authentication failed"},
        {"unreachable database",
         {"--pg-url", "postgresql://u:p@127.0.0.1:1/x"},
         "cannot connect to PostgreSQL"},
        {"bad broker URL",
         {"--amqp-url", "amqp//nowhere", "--pg-url", pg_url_},
         "invalid AMQP URL"},
        {"bad duration", {"--horizon", "soon"}, "'soon' is not a duration"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.what);
        auto arguments = c.arguments;
        arguments.insert(arguments.begin(), "run");
        arguments.insert(arguments.end(),
                         {"--schema", schema_, "--prefix", prefix_, "--http", "off"});
        const auto started = std::chrono::steady_clock::now();
        const auto result = run_cli(arguments, 20s);
        EXPECT_NE(result.exit_code, 0);
        EXPECT_NE(result.exit_code, -1) << "it hung";
        EXPECT_LT(std::chrono::steady_clock::now() - started, 15s);
        // Besides log lines, exactly one line: the error.
        std::vector<std::string> errors;
        for (const auto& line : lines_of(result.err)) {
            if (!line.starts_with("[")) errors.push_back(line);
        }
        ASSERT_EQ(errors.size(), 1u) << result.err;
        EXPECT_THAT(errors[0], ::testing::StartsWith("hourglass: "));
        EXPECT_THAT(errors[0], HasSubstr(c.expected));
    }
}

}  // namespace
}  // namespace hourglass::testing
