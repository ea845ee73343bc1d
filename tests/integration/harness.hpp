// Integration test harness: a real RabbitMQ and PostgreSQL (started privately by
// scripts/services around the test run, found through HOURGLASS_AMQP_URL / HOURGLASS_PG_URL),
// and `hourglass run` as a child process. Every test gets its own name prefix and schema,
// so tests never see each other's queues or jobs.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "support/amqp_client.hpp"
#include "support/build_paths.hpp"
#include "hourglass/command.hpp"
#include "hourglass/message.hpp"
#include "hourglass/time.hpp"

namespace hourglass::testing {

std::string env_or_skip(const char* name);

// A running `hourglass run`; stopped with SIGTERM (or killed) by the test.
class HourglassProcess {
public:
    // `http_port`: the port it was given with --http, for http_get (0: none).
    // Runs `binary` (default: the hourglass of this build) with `arguments`.
    HourglassProcess(std::vector<std::string> arguments, std::string log_path, int http_port = 0,
                     std::string binary = hourglass_binary());
    ~HourglassProcess();
    HourglassProcess(const HourglassProcess&) = delete;
    HourglassProcess& operator=(const HourglassProcess&) = delete;

    // SIGTERM and wait; returns the exit status (or -1 on timeout, after SIGKILL).
    int terminate(std::chrono::milliseconds timeout = std::chrono::seconds{20});
    void kill_hard();  // SIGKILL, no cleanup: a crash
    bool running();
    pid_t pid() const { return pid_; }
    // Resident memory now, from /proc (0 if not running).
    std::size_t resident_bytes() const;
    const std::string& log_path() const { return log_path_; }
    std::string log_tail(std::size_t lines = 40) const;
    int http_port() const { return http_port_; }

private:
    pid_t pid_ = -1;
    std::string log_path_;
    int http_port_ = 0;
};

// A TCP port on 127.0.0.1 that was free a moment ago (the OS picked it).
int free_local_port();

// GET http://127.0.0.1:<port><path>; status 0 when nothing answered.
struct HttpAnswer {
    int status = 0;
    std::string body;
    std::string content_type;
};
HttpAnswer http_get(int port, const std::string& path,
                    const std::vector<std::pair<std::string, std::string>>& headers = {});
// Polls `condition` every 100 ms until it holds or `timeout` passes.
bool wait_for(const std::function<bool()>& condition, std::chrono::milliseconds timeout);
// `url` (user:password@host...) with its user and password replaced.
std::string with_user(const std::string& url, const std::string& user, const std::string& password);
// POST http://127.0.0.1:<port><path> with an empty body and these headers.
HttpAnswer http_post(int port, const std::string& path,
                     const std::vector<std::pair<std::string, std::string>>& headers = {});
// A whole file (e.g. a process's log), and the lines of a text.
std::string read_all(const std::string& path);
std::vector<std::string> lines_of(const std::string& text);

// Runs the hourglass binary with `arguments` to completion (killed after `timeout`, exit code
// -1), in the test's environment, capturing stdout and stderr.
struct CliResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};
CliResult run_cli(const std::vector<std::string>& arguments,
                  std::chrono::milliseconds timeout = std::chrono::seconds{30});

// Runs `command` with /bin/sh; returns its exit status (-1 if it did not exit normally) and
// what it printed on stdout and stderr.
struct ShellResult {
    int exit_code = -1;
    std::string output;
};
ShellResult run_shell(const std::string& command);

// Holds, until destroyed, a lock that every test process on this machine shares under `name`
// (an flock on /tmp/hourglass-test-<name>.lock): scripts/test runs the columns of its matrix at
// once, and a test that changes the machine itself (installs a package, fills a shared
// directory) must not meet its twin from the other column.
class MachineLock {
public:
    explicit MachineLock(const std::string& name);
    ~MachineLock();
    MachineLock(const MachineLock&) = delete;
    MachineLock& operator=(const MachineLock&) = delete;

private:
    int fd_ = -1;
};

// Per-test setup: names, a database connection, and hourglass processes.
class HourglassTest : public ::testing::Test {
protected:
    void SetUp() override;
    void TearDown() override;

    // Starts `hourglass run` with this test's prefix and schema, HTTP on a free port (unless
    // `extra` has --http), plus `extra` flags.
    HourglassProcess& start_hourglass(std::vector<std::string> extra = {},
                                      std::string binary = hourglass_binary());
    // Waits until the process logged that it runs.
    void wait_until_ready(HourglassProcess& process);
    // Runs `scripts/services ACTION DIR ARGUMENTS` on the test's private services (stop-rabbit,
    // start-pg, rabbitmqctl ...); returns what it printed. Before stop-rabbit it deletes the
    // queues and exchanges earlier tests left in the vhost `/`
    // (delete_earlier_tests_broker_objects).
    std::string services(const std::string& action, const std::string& arguments = "");

    // A broker recovers every durable queue and exchange when it starts: a column's leftovers
    // (measured: 2,065 queues and 2,091 exchanges after 18 tests) kept RabbitMQ 3.10.8 busy
    // in Mnesia for half a minute, and once past the 60 s a start may take. So a restart
    // deletes them first.
    void delete_earlier_tests_broker_objects();

    Message command(const std::string& routing_key, const std::string& body = "body") const;
    Message delayed(const std::string& id, std::int64_t delay_ms,
                    const std::string& routing_key = "jobs.test") const;
    // `count` jobs "<stem>0", "<stem>1" ... with x-schedule-at = first_due + i * step
    // (step 0: a burst due at one instant).
    std::vector<Message> scheduled_series(const std::string& stem, int count, TimePoint first_due,
                                          Milliseconds step = Milliseconds{0}) const;
    // x-cancel for job `id`, with the receipt sent to `reply_to` if given.
    Message cancel_command(const std::string& id, const std::string& reply_to = "") const;
    std::string out_exchange() const { return prefix_ + ".out"; }
    std::string in_exchange() const { return prefix_ + ".in"; }

    // SQL helpers (schema already on the search_path).
    pqxx::result sql(const std::string& query);
    std::string job_state(const std::string& id);
    // Polls until the SQL returns `expected` in its first cell, or the timeout passes.
    bool eventually(const std::string& query, const std::string& expected,
                    std::chrono::milliseconds timeout = std::chrono::seconds{10});

    std::string amqp_url_;        // the least-privilege users (docs/operating.md "Permissions")
    std::string pg_url_;
    std::string admin_amqp_url_;  // administrator / database owner (CREATEROLE)
    std::string admin_pg_url_;
    std::string prefix_;
    std::string schema_;
    std::vector<std::unique_ptr<HourglassProcess>> processes_;
    std::unique_ptr<pqxx::connection> db_;
};

// Reads the JSON receipt of a received message.
struct ReceiptView {
    std::string id;
    std::string status;
    std::optional<std::string> due;
    std::optional<std::string> error;
    std::optional<std::string> correlation_id;
};
ReceiptView parse_receipt(const Received& received);

// What a client subscribed to the output exchange and to its receipt queue received: the last
// receipt (receipts are JSON), and the releases in arrival order.
struct ReceiptAndReleases {
    std::optional<ReceiptView> receipt;
    std::vector<Received> releases;
};
ReceiptAndReleases split_receipts(const std::vector<Received>& received);


}  // namespace hourglass::testing
