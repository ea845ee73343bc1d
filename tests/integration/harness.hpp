// Integration test harness: a real RabbitMQ and PostgreSQL (started privately by
// scripts/services around the test run, found through HOURGLASS_AMQP_URL / HOURGLASS_PG_URL),
// and `hourglass run` as a child process. Every test gets its own name prefix and schema,
// so tests never see each other's queues or jobs.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "amqp/connection.hpp"
#include "hourglass/command.hpp"
#include "hourglass/message.hpp"
#include "hourglass/time.hpp"

namespace hourglass::testing {

std::string env_or_skip(const char* name);

// A running `hourglass run`; stopped with SIGTERM (or killed) by the test.
class HourglassProcess {
public:
    HourglassProcess(std::vector<std::string> arguments, std::string log_path);
    ~HourglassProcess();
    HourglassProcess(const HourglassProcess&) = delete;
    HourglassProcess& operator=(const HourglassProcess&) = delete;

    // SIGTERM and wait; returns the exit status (or -1 on timeout, after SIGKILL).
    int terminate(std::chrono::milliseconds timeout = std::chrono::seconds{20});
    void kill_hard();  // SIGKILL, no cleanup: a crash
    bool running();
    const std::string& log_path() const { return log_path_; }
    std::string log_tail(std::size_t lines = 40) const;

private:
    pid_t pid_ = -1;
    std::string log_path_;
};

// A received message and when it arrived.
struct Received {
    Message message;
    TimePoint received_at;
    std::chrono::sys_time<std::chrono::microseconds> received_at_us;
};

// A client of the broker, as a user's application would be.
class Client {
public:
    explicit Client(const std::string& url);
    // Publishes with publisher confirms and waits for the broker's ack.
    void publish(const Message& message);
    // Publishes many, waiting for the confirms once at the end.
    void publish_all(const std::vector<Message>& messages);
    // Declares an exclusive server-named queue bound to `exchange` with `binding_key` and
    // consumes it; returns the queue name.
    std::string subscribe(const std::string& exchange, const std::string& binding_key);
    // Declares an exclusive queue for receipts; returns its name.
    std::string receipt_queue();
    std::optional<Received> receive(std::chrono::milliseconds timeout);
    // Everything that arrives within `quiet` of the last message (and at most `total`).
    std::vector<Received> drain(std::chrono::milliseconds quiet, std::chrono::milliseconds total);
    std::optional<std::uint32_t> queue_size(const std::string& queue);
    amqp::Connection& connection() { return connection_; }

private:
    void wait_for_confirms();
    amqp::Connection connection_;
    std::uint64_t published_ = 0;
    std::uint64_t confirmed_ = 0;
    std::vector<Received> early_;  // deliveries that arrived while waiting for confirms
};

// Per-test setup: names, a database connection, and hourglass processes.
class HourglassTest : public ::testing::Test {
protected:
    void SetUp() override;
    void TearDown() override;

    // Starts `hourglass run` with this test's prefix and schema plus `extra` flags.
    HourglassProcess& start_hourglass(std::vector<std::string> extra = {});
    // Waits until the topology exists (the input queue can be declared passively).
    void wait_until_ready(HourglassProcess& process);

    Message command(const std::string& routing_key, const std::string& body = "body") const;
    Message delayed(const std::string& id, std::int64_t delay_ms,
                    const std::string& routing_key = "jobs.test") const;
    std::string out_exchange() const { return prefix_ + ".out"; }
    std::string in_exchange() const { return prefix_ + ".in"; }

    // SQL helpers (schema already on the search_path).
    pqxx::result sql(const std::string& query);
    std::string job_state(const std::string& id);
    // Polls until the SQL returns `expected` in its first cell, or the timeout passes.
    bool eventually(const std::string& query, const std::string& expected,
                    std::chrono::milliseconds timeout = std::chrono::seconds{10});

    std::string amqp_url_;
    std::string pg_url_;
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

const FieldValue* header_of(const Message& message, std::string_view name);
std::string string_header(const Message& message, std::string_view name);

}  // namespace hourglass::testing
