// The programs in examples/, run as a user runs them against the real services, so that they
// cannot rot: each publishes with confirms, asks for receipts and consumes the releases with
// dedupe on x-hourglass-id + x-hourglass-run, and exits 0 only when every job arrived once.
#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

class Examples : public HourglassTest {
protected:
    // The example's environment: the least-privilege user and this test's prefix.
    std::string environment() const {
        return "HOURGLASS_AMQP_URL='" + amqp_url_ + "' HOURGLASS_PREFIX='" + prefix_ + "' ";
    }
    void expect_every_job_released_once(const ShellResult& result) {
        EXPECT_EQ(result.exit_code, 0) << result.output;
        EXPECT_NE(result.output.find("published 3 jobs with confirms"), std::string::npos) << result.output;
        EXPECT_NE(result.output.find("3 receipts: scheduled"), std::string::npos) << result.output;
        EXPECT_NE(result.output.find("all released once"), std::string::npos) << result.output;
        EXPECT_EQ(sql("SELECT count(*) FROM jobs WHERE id LIKE 'example-%' AND runs = 1")[0][0].as<int>(), 3);
    }
};

TEST_F(Examples, python_pika_schedules_with_confirms_and_consumes_each_release_once) {
    start_hourglass();
    // Debian's interpreter, where python3-pika is installed (scripts/install-deps).
    const auto result = run_shell(environment() + "timeout 60 /usr/bin/python3 " + source_dir() +
                              "/examples/python/schedule_and_consume.py");
    expect_every_job_released_once(result);
}

TEST_F(Examples, node_amqplib_schedules_with_confirms_and_consumes_each_release_once) {
    const std::string dir = source_dir() + "/examples/node";
    {
        // npm ci fills one directory of the source tree, which the other column shares.
        const MachineLock npm("examples-node");
        if (run_shell("test -d " + dir + "/node_modules/amqplib").exit_code != 0) {
            const auto install =
                run_shell("cd " + dir + " && timeout 300 npm ci --no-audit --no-fund");
            ASSERT_EQ(install.exit_code, 0) << "npm ci in examples/node failed:\n" << install.output;
        }
    }
    start_hourglass();
    const auto result = run_shell(environment() + "timeout 60 node " + dir + "/schedule_and_consume.js");
    expect_every_job_released_once(result);
}

}  // namespace
}  // namespace hourglass::testing
