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

Client::Client(const std::string& url) : connection_(amqp::ConnectionOptions{url, "hourglass test"}) {
    connection_.open_channel(1);
    connection_.enable_confirms(1);
    connection_.open_channel(2);
}

void Client::wait_for_confirms() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
    while (confirmed_ < published_) {
        if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("no confirm");
        auto event = connection_.next_event(std::chrono::milliseconds{100});
        if (!event) continue;
        if (auto* confirm = std::get_if<amqp::Confirm>(&*event)) {
            if (!confirm->ack) throw std::runtime_error("publish nacked");
            confirmed_ = std::max(confirmed_, confirm->delivery_tag);
        } else if (auto* delivery = std::get_if<amqp::Delivery>(&*event)) {
            const auto now = std::chrono::system_clock::now();
            early_.push_back({std::move(delivery->message),
                              std::chrono::time_point_cast<Milliseconds>(now),
                              std::chrono::time_point_cast<std::chrono::microseconds>(now)});
        }
    }
}

void Client::publish(const Message& message) {
    published_ = connection_.publish(1, message);
    wait_for_confirms();
}

void Client::publish_all(const std::vector<Message>& messages) {
    for (const auto& message : messages) published_ = connection_.publish(1, message);
    wait_for_confirms();
}

std::string Client::subscribe(const std::string& exchange, const std::string& binding_key) {
    const auto queue = connection_.declare_queue(2, "", {}, /*exclusive=*/true);
    connection_.bind_queue(2, queue, exchange, binding_key);
    connection_.consume(2, queue, /*no_ack=*/true);
    return queue;
}

std::string Client::receipt_queue() {
    const auto queue = connection_.declare_queue(2, "", {}, /*exclusive=*/true);
    connection_.consume(2, queue, /*no_ack=*/true);
    return queue;
}

std::optional<Received> Client::receive(std::chrono::milliseconds timeout) {
    if (!early_.empty()) {
        auto first = std::move(early_.front());
        early_.erase(early_.begin());
        return first;
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
        const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return std::nullopt;
        auto event = connection_.next_event(left);
        if (!event) continue;
        if (auto* delivery = std::get_if<amqp::Delivery>(&*event)) {
            const auto now = std::chrono::system_clock::now();
            return Received{std::move(delivery->message),
                            std::chrono::time_point_cast<Milliseconds>(now),
                            std::chrono::time_point_cast<std::chrono::microseconds>(now)};
        }
    }
}

std::vector<Received> Client::drain(std::chrono::milliseconds quiet, std::chrono::milliseconds total) {
    std::vector<Received> all;
    const auto deadline = std::chrono::steady_clock::now() + total;
    while (std::chrono::steady_clock::now() < deadline) {
        auto received = receive(quiet);
        if (!received) break;
        all.push_back(std::move(*received));
    }
    return all;
}

std::optional<std::uint32_t> Client::queue_size(const std::string& queue) {
    return connection_.queue_message_count(2, queue);
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

const FieldValue* header_of(const Message& message, std::string_view name) {
    return find_header(message.properties, name);
}

std::string string_header(const Message& message, std::string_view name) {
    const auto* value = header_of(message, name);
    if (value == nullptr) return "<absent>";
    const auto* text = std::get_if<std::string>(&value->value);
    return text ? *text : "<not a string>";
}

}  // namespace hourglass::testing
