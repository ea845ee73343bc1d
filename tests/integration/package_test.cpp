// The Debian package (scripts/package, cmake/packaging.cmake), as an operator installs it:
// built by CPack from this build, installed with dpkg, its systemd unit verified, the packaged
// binary run with the packaged config against the test services (a job goes through), then
// purged without leaving a file behind. Needs root (CI runs as root).
#include <unistd.h>

#include <filesystem>

#include "integration/harness.hpp"
#include "support/amqp_client.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::vector<std::string> kPackagedFiles = {
    "/usr/bin/hourglass", "/usr/lib/systemd/system/hourglass.service",
    "/etc/hourglass/hourglass.toml", "/etc/hourglass/hourglass.env",
    "/usr/share/hourglass/migrations/001_jobs.sql", "/usr/share/doc/hourglass/docs/reference.md"};

class Package : public HourglassTest {
protected:
    // The packaged binary with the packaged config, against the test services: a job goes
    // through, and a Prometheus on the same host scrapes it by the names it would use for the
    // packaged `http = "127.0.0.1:9464"` (this test's port: the harness gives one).
    void runs_a_job_and_is_scraped_with_the_packaged_config() {
        auto& process = start_hourglass({"--config", "/etc/hourglass/hourglass.toml"}, "/usr/bin/hourglass");
        Client client(amqp_url_);
        client.subscribe(out_exchange(), "#");
        client.publish(delayed("from-the-package", 300));
        const auto received = client.receive(10s);
        ASSERT_TRUE(received) << process.log_tail();
        EXPECT_EQ(string_header(received->message, "x-hourglass-id"), "from-the-package");
        for (const auto* host : {"localhost:9464", "127.0.0.1:9464"}) {
            const auto scraped = http_get(process.http_port(), "/metrics", {{"Host", host}});
            EXPECT_EQ(scraped.status, 200) << host << ": " << scraped.body;
            EXPECT_NE(scraped.body.find("hourglass_build_info"), std::string::npos) << host;
        }
        process.terminate();
    }
};

TEST_F(Package, deb_installs_verifies_runs_a_job_and_purges_cleanly) {
    if (geteuid() != 0) GTEST_SKIP() << "dpkg -i needs root; CI runs this as root";
    // The package goes into this machine's dpkg database: one test process at a time.
    const MachineLock dpkg("package");
    if (run_shell("dpkg-query -W -f='${Status}' hourglass").output.find("install ok installed") !=
        std::string::npos) {
        GTEST_SKIP() << "a hourglass package is installed on this machine: not touching it";
    }

    // Build the package from this build directory.
    const auto out = fs::temp_directory_path() / ("hourglass-deb-" + prefix_);
    fs::create_directories(out);
    const auto cpack = run_shell("cd '" + build_dir() + "' && cpack -G DEB -B '" + out.string() + "'");
    ASSERT_EQ(cpack.exit_code, 0) << cpack.output;
    std::string deb;
    for (const auto& entry : fs::directory_iterator(out)) {
        if (entry.path().extension() == ".deb") deb = entry.path();
    }
    ASSERT_FALSE(deb.empty()) << cpack.output;

    // What is in it: the files, the conffiles, the secrets file readable by root only, and the
    // shared libraries' packages as dependencies.
    const auto contents = run_shell("dpkg-deb -c '" + deb + "'").output;
    for (const auto& file : kPackagedFiles) {
        EXPECT_NE(contents.find("." + file), std::string::npos) << file << " missing from\n" << contents;
    }
    EXPECT_NE(contents.find("-rw------- root/root"), std::string::npos) << "hourglass.env is 0600";
    const auto conffiles = run_shell("dpkg-deb -I '" + deb + "' conffiles").output;
    EXPECT_NE(conffiles.find("/etc/hourglass/hourglass.toml"), std::string::npos) << conffiles;
    EXPECT_NE(conffiles.find("/etc/hourglass/hourglass.env"), std::string::npos) << conffiles;
    const auto depends = run_shell("dpkg-deb -f '" + deb + "' Depends").output;
    EXPECT_NE(depends.find("librabbitmq4"), std::string::npos) << depends;
    EXPECT_NE(depends.find("libpqxx"), std::string::npos) << depends;

    // Install it; its unit must verify.
    const auto install = run_shell("dpkg -i '" + deb + "'");
    ASSERT_EQ(install.exit_code, 0) << install.output;
    struct Purge {
        ~Purge() { run_shell("dpkg -P hourglass"); }
    } purge_on_exit;
    const auto verify = run_shell("systemd-analyze verify /usr/lib/systemd/system/hourglass.service");
    EXPECT_EQ(verify.exit_code, 0) << verify.output;
    const auto unit = run_shell("cat /usr/lib/systemd/system/hourglass.service").output;
    for (const auto* hardening : {"DynamicUser=yes", "ProtectSystem=strict", "NoNewPrivileges=yes",
                                  "CapabilityBoundingSet=\n", "ProtectHome=yes"}) {
        EXPECT_NE(unit.find(hardening), std::string::npos) << hardening;
    }
    // The unit's command line parses (the command comes before its flags): it gets as far as
    // connecting, to nothing here.
    const std::string_view key = "ExecStart=";
    const auto exec_line = unit.find(key);
    ASSERT_NE(exec_line, std::string::npos);
    const auto exec_start =
        unit.substr(exec_line + key.size(), unit.find('\n', exec_line) - exec_line - key.size());
    const auto started = run_shell("timeout 20 " + exec_start +
                                   " --http off --pg-url postgresql://127.0.0.1:1/none 2>&1");
    EXPECT_EQ(started.output.find("not expected"), std::string::npos) << exec_start << ": " << started.output;
    EXPECT_NE(started.output.find("cannot connect to PostgreSQL"), std::string::npos)
        << exec_start << ": " << started.output;
    // The publisher may ask for real-time scheduling (lowest priority only), and a refused
    // system call fails instead of killing the service.
    for (const auto* permit : {"LimitRTPRIO=1\n", "SystemCallFilter=sched_setscheduler\n",
                               "SystemCallErrorNumber=EPERM\n"}) {
        EXPECT_NE(unit.find(permit), std::string::npos) << permit;
    }

    runs_a_job_and_is_scraped_with_the_packaged_config();

    // Purge: nothing left behind, conffiles included.
    const auto purge = run_shell("dpkg -P hourglass");
    EXPECT_EQ(purge.exit_code, 0) << purge.output;
    for (const auto& file : kPackagedFiles) EXPECT_FALSE(fs::exists(file)) << file << " left behind";
    EXPECT_FALSE(fs::exists("/etc/hourglass")) << "/etc/hourglass left behind";
    fs::remove_all(out);
}

}  // namespace
}  // namespace hourglass::testing
