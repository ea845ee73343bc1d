#include "integration/harness.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

namespace hourglass::testing {

std::string env_or_skip(const char* name) {
    const char* value = std::getenv(name);
    return value ? value : "";
}

HourglassProcess::HourglassProcess(std::vector<std::string> arguments, std::string log_path)
    : log_path_(std::move(log_path)) {
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
        const int log = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(log, STDOUT_FILENO);
        dup2(log, STDERR_FILENO);
        std::vector<char*> argv;
        std::string binary = HOURGLASS_BINARY;
        argv.push_back(binary.data());
        for (auto& argument : arguments) argv.push_back(argument.data());
        argv.push_back(nullptr);
        execv(binary.c_str(), argv.data());
        _exit(127);
    }
}

HourglassProcess::~HourglassProcess() {
    if (pid_ > 0) terminate();
}

bool HourglassProcess::running() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
    }
    return true;
}

int HourglassProcess::terminate(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    kill_hard();
    return -1;
}

void HourglassProcess::kill_hard() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
}

std::size_t HourglassProcess::resident_bytes() const {
    if (pid_ <= 0) return 0;
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6)) * 1024;
    }
    return 0;
}

std::string HourglassProcess::log_tail(std::size_t lines) const {
    std::ifstream in(log_path_);
    std::deque<std::string> tail;
    for (std::string line; std::getline(in, line);) {
        tail.push_back(line);
        if (tail.size() > lines) tail.pop_front();
    }
    std::string out;
    for (const auto& line : tail) out += line + "\n";
    return out;
}

void HourglassTest::SetUp() {
    amqp_url_ = env_or_skip("HOURGLASS_AMQP_URL");
    pg_url_ = env_or_skip("HOURGLASS_PG_URL");
    if (amqp_url_.empty() || pg_url_.empty()) {
        GTEST_SKIP() << "HOURGLASS_AMQP_URL / HOURGLASS_PG_URL not set: run through scripts/test";
    }
    std::random_device random;
    const auto tag = std::to_string(random() % 1000000000);
    prefix_ = "t" + tag;
    schema_ = "hg_t" + tag;
    db_ = std::make_unique<pqxx::connection>(pg_url_);
}

void HourglassTest::TearDown() {
    for (auto& process : processes_) {
        if (process->running()) process->terminate();
        if (HasFailure()) {
            std::cerr << "---- hourglass log (" << process->log_path() << ") ----\n"
                      << process->log_tail() << "----\n";
        }
    }
    processes_.clear();
    if (!db_) return;
    // Leave nothing behind: the broker objects and the schema of this test.
    try {
        pqxx::work tx(*db_);
        tx.exec("DROP SCHEMA IF EXISTS " + tx.quote_name(schema_) + " CASCADE");
        tx.commit();
    } catch (const std::exception&) {
    }
}

HourglassProcess& HourglassTest::start_hourglass(std::vector<std::string> extra) {
    std::vector<std::string> arguments = {"run",      "--amqp-url", amqp_url_, "--pg-url",
                                          pg_url_,    "--prefix",   prefix_,   "--schema",
                                          schema_,    "--log-level", "debug"};
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    const auto log = "/tmp/hourglass-" + prefix_ + "-" + std::to_string(processes_.size()) + ".log";
    processes_.push_back(std::make_unique<HourglassProcess>(arguments, log));
    auto& process = *processes_.back();
    wait_until_ready(process);
    return process;
}

void HourglassTest::wait_until_ready(HourglassProcess& process) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
    while (std::chrono::steady_clock::now() < deadline) {
        if (!process.running()) FAIL() << "hourglass exited early:\n" << process.log_tail();
        if (process.log_tail(200).find("hourglass running") != std::string::npos) return;
        std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
    FAIL() << "hourglass did not start:\n" << process.log_tail();
}

void HourglassTest::services(const std::string& action, const std::string& arguments) {
    const auto dir = env_or_skip("HOURGLASS_SERVICES_DIR");
    ASSERT_FALSE(dir.empty()) << "HOURGLASS_SERVICES_DIR not set: run through scripts/test";
    const auto command = std::string(HOURGLASS_SERVICES_SCRIPT) + " " + action + " '" + dir +
                         "' " + arguments + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

Message HourglassTest::command(const std::string& routing_key, const std::string& body) const {
    Message message;
    message.exchange = in_exchange();
    message.routing_key = routing_key;
    message.body = body;
    return message;
}

Message HourglassTest::delayed(const std::string& id, std::int64_t delay_ms,
                               const std::string& routing_key) const {
    auto message = command(routing_key, "job " + id);
    message.properties.message_id = id;
    set_header(message.properties, "x-delay", delay_ms);
    return message;
}

pqxx::result HourglassTest::sql(const std::string& query) {
    pqxx::work tx(*db_);
    tx.exec("SET LOCAL search_path TO " + tx.quote_name(schema_));
    auto result = tx.exec(query);
    tx.commit();
    return result;
}

std::string HourglassTest::job_state(const std::string& id) {
    pqxx::work tx(*db_);
    const auto result =
        tx.exec_params("SELECT state FROM " + tx.quote_name(schema_) + ".jobs WHERE id = $1", id);
    return result.empty() ? "<none>" : result[0][0].as<std::string>();
}

bool HourglassTest::eventually(const std::string& query, const std::string& expected,
                               std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string last;
    while (std::chrono::steady_clock::now() < deadline) {
        const auto result = sql(query);
        last = result.empty() || result[0][0].is_null() ? "<null>" : result[0][0].as<std::string>();
        if (last == expected) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
    ADD_FAILURE() << "query `" << query << "` gave " << last << ", expected " << expected;
    return false;
}

ReceiptView parse_receipt(const Received& received) {
    const auto json = nlohmann::json::parse(received.message.body);
    ReceiptView view;
    view.id = json.at("id").is_null() ? "" : json.at("id").get<std::string>();
    view.status = json.at("status").get<std::string>();
    if (!json.at("due").is_null()) view.due = json.at("due").get<std::string>();
    if (!json.at("error").is_null()) view.error = json.at("error").get<std::string>();
    view.correlation_id = received.message.properties.correlation_id;
    return view;
}

}  // namespace hourglass::testing
