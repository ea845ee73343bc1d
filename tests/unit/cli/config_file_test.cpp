// The config file (src/cli/config_file.hpp): keys named like the flags, sections per command,
// and the order flag > environment > file > default.
#include "cli/config_file.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace hourglass::cli {
namespace {

using ::testing::HasSubstr;

class ConfigFileTest : public ::testing::Test {
protected:
    ConfigFileTest() {
        app_.require_subcommand(1);
        run_ = app_.add_subcommand("run");
        run_->add_option("--horizon", horizon_)->envname("HOURGLASS_TEST_HORIZON");
        run_->add_option("--prefix", prefix_);
        run_->add_option("--queue-type", queue_type_)->check(CLI::IsMember({"classic", "quorum"}));
        run_->add_flag("--no-audit", no_audit_);
        status_ = app_.add_subcommand("status");
        status_->add_option("--schema", schema_);
    }
    ~ConfigFileTest() override { unsetenv("HOURGLASS_TEST_HORIZON"); }

    std::string write(const std::string& text) {
        // One file per test: ctest runs tests in parallel processes.
        const auto path = ::testing::TempDir() + "/hourglass-config-" +
                          ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".toml";
        std::ofstream(path) << text;
        return path;
    }
    void parse(std::vector<std::string> arguments) {
        std::vector<const char*> argv = {"hourglass"};
        for (const auto& argument : arguments) argv.push_back(argument.c_str());
        app_.parse(static_cast<int>(argv.size()), argv.data());
    }

    CLI::App app_;
    CLI::App* run_ = nullptr;
    CLI::App* status_ = nullptr;
    std::string horizon_ = "60s", prefix_ = "hourglass", queue_type_ = "classic",
                schema_ = "hourglass";
    bool no_audit_ = false;
};

TEST_F(ConfigFileTest, top_level_keys_fill_options_of_the_command) {
    const auto path = write("horizon = \"2m\"\nprefix = 'acme'\nno-audit = true\nschema = \"s\"\n");
    parse({"run"});
    apply_config_file(app_, *run_, path);
    EXPECT_EQ(horizon_, "2m");
    EXPECT_EQ(prefix_, "acme");
    EXPECT_TRUE(no_audit_);
    EXPECT_EQ(schema_, "hourglass") << "schema belongs to another command: ignored";
}

TEST_F(ConfigFileTest, a_section_applies_to_its_command_only) {
    const auto path = write("[run]\nprefix = \"acme\"\n[status]\nschema = \"jobs\"\n");
    parse({"status"});
    apply_config_file(app_, *status_, path);
    EXPECT_EQ(schema_, "jobs");
    EXPECT_EQ(prefix_, "hourglass");
}

TEST_F(ConfigFileTest, flags_and_environment_win_over_the_file) {
    const auto path = write("horizon = \"2m\"\nprefix = \"acme\"\n");
    setenv("HOURGLASS_TEST_HORIZON", "5m", 1);
    parse({"run", "--prefix", "flag"});
    apply_config_file(app_, *run_, path);
    EXPECT_EQ(prefix_, "flag");
    EXPECT_EQ(horizon_, "5m");
}

TEST_F(ConfigFileTest, ini_syntax_is_read_too) {
    const auto path = write("; comment\n[run]\nprefix=acme\n");
    parse({"run"});
    apply_config_file(app_, *run_, path);
    EXPECT_EQ(prefix_, "acme");
}

void expect_error(const std::function<void()>& apply, const std::string& expected) {
    try {
        apply();
        ADD_FAILURE() << "no error";
    } catch (const std::runtime_error& error) {
        EXPECT_THAT(error.what(), HasSubstr(expected));
    }
}

TEST_F(ConfigFileTest, unknown_keys_sections_and_invalid_values_name_the_key) {
    parse({"run"});
    expect_error([&] { apply_config_file(app_, *run_, write("horizn = \"1m\"\n")); },
                 "horizn: unknown setting");
    expect_error([&] { apply_config_file(app_, *run_, write("[runn]\nprefix = \"a\"\n")); },
                 "unknown section");
    expect_error([&] { apply_config_file(app_, *run_, write("queue-type = \"fast\"\n")); },
                 "queue-type");
    expect_error([&] { apply_config_file(app_, *run_, "/nonexistent/hourglass.toml"); },
                 "cannot read config file /nonexistent/hourglass.toml");
}

}  // namespace
}  // namespace hourglass::cli
