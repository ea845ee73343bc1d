#include "integration/harness.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

namespace hourglass::testing {

std::string env_or_skip(const char* name) {
    const char* value = std::getenv(name);
    return value ? value : "";
}

HourglassProcess::HourglassProcess(std::vector<std::string> arguments, std::string log_path,
                                   int http_port, std::string binary)
    : log_path_(std::move(log_path)), http_port_(http_port) {
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
        const int log = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(log, STDOUT_FILENO);
        dup2(log, STDERR_FILENO);
        std::vector<char*> argv;
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

int free_local_port() {
    const int socket_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (socket_fd < 0) throw std::runtime_error("socket failed");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof address;
    if (bind(socket_fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        getsockname(socket_fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        close(socket_fd);
        throw std::runtime_error("cannot find a free port");
    }
    close(socket_fd);
    return ntohs(address.sin_port);
}

namespace {
HttpAnswer http_request(int port, const std::function<httplib::Result(httplib::Client&)>& send) {
    httplib::Client client("127.0.0.1", port);
    client.set_connection_timeout(std::chrono::seconds{2});
    client.set_read_timeout(std::chrono::seconds{5});
    const auto response = send(client);
    if (!response) return {};
    return {response->status, response->body, response->get_header_value("Content-Type")};
}
}  // namespace

bool wait_for(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (condition()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds{100});
    }
    return condition();
}

std::string read_all(const std::string& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

HttpAnswer http_get(int port, const std::string& path,
                    const std::vector<std::pair<std::string, std::string>>& headers) {
    return http_request(port, [&](httplib::Client& client) {
        return client.Get(path.c_str(), httplib::Headers(headers.begin(), headers.end()));
    });
}

std::string with_user(const std::string& url, const std::string& user, const std::string& password) {
    const auto scheme_end = url.find("://") + 3;
    return url.substr(0, scheme_end) + user + ":" + password + url.substr(url.find('@'));
}

HttpAnswer http_post(int port, const std::string& path,
                     const std::vector<std::pair<std::string, std::string>>& headers) {
    return http_request(port, [&](httplib::Client& client) {
        return client.Post(path.c_str(), httplib::Headers(headers.begin(), headers.end()), "",
                           "text/plain");
    });
}

CliResult run_cli(const std::vector<std::string>& arguments, std::chrono::milliseconds timeout) {
    static int invocation = 0;
    const auto base = "/tmp/hourglass-cli-" + std::to_string(getpid()) + "-" +
                      std::to_string(++invocation);
    const auto out_path = base + ".out";
    const auto err_path = base + ".err";
    // Everything the child needs is prepared before fork: the test process has threads, so the
    // child may only make async-signal-safe calls.
    std::vector<std::string> copy = arguments;
    std::string binary = hourglass_binary();
    std::vector<char*> argv = {binary.data()};
    for (auto& argument : copy) argv.push_back(argument.data());
    argv.push_back(nullptr);
    const int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        dup2(out_fd, STDOUT_FILENO);
        dup2(err_fd, STDERR_FILENO);
        execv(binary.c_str(), argv.data());
        _exit(127);
    }
    close(out_fd);
    close(err_fd);
    CliResult result;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (true) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
        if (std::chrono::steady_clock::now() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    const auto slurp = [](const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::remove(path.c_str());
        return text;
    };
    result.out = slurp(out_path);
    result.err = slurp(err_path);
    return result;
}

void HourglassTest::SetUp() {
    amqp_url_ = env_or_skip("HOURGLASS_AMQP_URL");
    pg_url_ = env_or_skip("HOURGLASS_PG_URL");
    if (amqp_url_.empty() || pg_url_.empty()) {
        GTEST_SKIP() << "HOURGLASS_AMQP_URL / HOURGLASS_PG_URL not set: run through scripts/test";
    }
    // The admin URLs, for what an application would not be allowed to do; without them (an
    // older services directory) everything runs as the one user.
    admin_amqp_url_ = env_or_skip("HOURGLASS_AMQP_ADMIN_URL");
    if (admin_amqp_url_.empty()) admin_amqp_url_ = amqp_url_;
    admin_pg_url_ = env_or_skip("HOURGLASS_PG_ADMIN_URL");
    if (admin_pg_url_.empty()) admin_pg_url_ = pg_url_;
    std::random_device random;
    const auto tag = std::to_string(random() % 1000000000);
    // Under `hourglass.`: the least-privilege user of scripts/services may use only names that
    // match ^hourglass\..* (docs/operating.md "Permissions").
    prefix_ = "hourglass.t" + tag;
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
    // Drop this test's schema. Its broker objects (empty queues and exchanges under its own
    // prefix: 21 queues for a 2 s horizon) stay: listing them costs a rabbitmqctl call per
    // test. A broker restart deletes them first (delete_earlier_tests_broker_objects).
    try {
        pqxx::work tx(*db_);
        tx.exec("DROP SCHEMA IF EXISTS " + tx.quote_name(schema_) + " CASCADE");
        tx.commit();
    } catch (const std::exception&) {
    }
}

void HourglassTest::delete_earlier_tests_broker_objects() {
    // Every test's names start with hourglass.t<number>. (SetUp); this test's own stay.
    const std::regex earlier_test(R"(hourglass\.t[0-9]+\..*)");
    auto names_of = [&](const std::string& kind) {
        std::vector<std::string> names;
        std::istringstream lines(
            services("rabbitmqctl", kind + " -q --no-table-headers -p / name"));
        for (std::string name; std::getline(lines, name);) {
            if (std::regex_match(name, earlier_test) && name.rfind(prefix_ + ".", 0) != 0) {
                names.push_back(name);
            }
        }
        return names;
    };
    const auto started = std::chrono::steady_clock::now();
    const auto queues = names_of("list_queues");
    const auto exchanges = names_of("list_exchanges");
    try {
        // Without waiting for each reply, over several channels, as hourglass declares its
        // delay queues (src/delay/topology.cpp): one at a time took 14 s for 4,000 objects.
        Client admin(admin_amqp_url_);
        std::vector<amqp::Channel> channels;
        for (std::uint16_t channel = 10; channel < 18; ++channel) {  // the Client uses 1 and 2
            channels.emplace_back(admin.connection(), channel);
        }
        std::size_t next = 0;
        const auto next_channel = [&]() -> amqp::Channel& {
            return channels[next++ % channels.size()];
        };
        for (const auto& queue : queues) next_channel().delete_queue(queue, amqp::Reply::none);
        for (const auto& exchange : exchanges) {
            next_channel().delete_exchange(exchange, amqp::Reply::none);
        }
        amqp::await_channels(channels, "deleting earlier tests' queues and exchanges");
    } catch (const std::exception& e) {
        ADD_FAILURE() << "deleting earlier tests' broker objects: " << e.what();
    }
    std::cerr << "[broker restart] deleted " << queues.size() << " queues and " << exchanges.size()
              << " exchanges of earlier tests in "
              << std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - started)
                     .count()
              << " ms\n";
}

ShellResult run_shell(const std::string& command) {
    ShellResult result;
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    if (pipe == nullptr) return result;
    char buffer[512];
    while (fgets(buffer, sizeof buffer, pipe)) result.output += buffer;
    const int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

MachineLock::MachineLock(const std::string& name) {
    const auto path = "/tmp/hourglass-test-" + name + ".lock";
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) throw std::runtime_error("cannot open " + path);
    while (flock(fd_, LOCK_EX) != 0) {
        if (errno != EINTR) {
            close(fd_);
            throw std::runtime_error("cannot lock " + path);
        }
    }
}

MachineLock::~MachineLock() { close(fd_); }

HourglassProcess& HourglassTest::start_hourglass(std::vector<std::string> extra, std::string binary) {
    std::vector<std::string> arguments = {"run",      "--amqp-url", amqp_url_, "--pg-url",
                                          pg_url_,    "--prefix",   prefix_,   "--schema",
                                          schema_,    "--log-level", "debug"};
    // Every process gets its own HTTP port: the default one would be shared by all of them.
    int http_port = 0;
    if (std::find(extra.begin(), extra.end(), "--http") == extra.end()) {
        http_port = free_local_port();
        arguments.insert(arguments.end(), {"--http", "127.0.0.1:" + std::to_string(http_port)});
    }
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    const auto log = "/tmp/hourglass-" + prefix_ + "-" + std::to_string(processes_.size()) + ".log";
    processes_.push_back(std::make_unique<HourglassProcess>(arguments, log, http_port, std::move(binary)));
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

std::string HourglassTest::services(const std::string& action, const std::string& arguments) {
    if (action == "stop-rabbit") delete_earlier_tests_broker_objects();
    const auto dir = env_or_skip("HOURGLASS_SERVICES_DIR");
    if (dir.empty()) {
        ADD_FAILURE() << "HOURGLASS_SERVICES_DIR not set: run through scripts/test";
        return {};
    }
    const auto output = dir + "/last-action.log";
    const auto command = services_script() + " " + action + " '" + dir +
                         "' " + arguments + " >'" + output + "' 2>&1";
    const int status = std::system(command.c_str());
    std::ifstream log(output);
    std::string text(std::istreambuf_iterator<char>(log), {});
    if (status != 0) ADD_FAILURE() << command << " failed:\n" << text;
    return text;
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

std::vector<Message> HourglassTest::scheduled_series(const std::string& stem, int count,
                                                     TimePoint first_due, Milliseconds step) const {
    std::vector<Message> jobs;
    jobs.reserve(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        auto job = delayed(stem + std::to_string(i), 0);
        remove_header(job.properties, "x-delay");
        set_header(job.properties, "x-schedule-at", to_epoch_ms(first_due + i * step));
        jobs.push_back(std::move(job));
    }
    return jobs;
}

Message HourglassTest::cancel_command(const std::string& id, const std::string& reply_to) const {
    auto cancel = command("ignored", "");
    cancel.properties.message_id = id;
    set_header(cancel.properties, "x-cancel", true);
    if (!reply_to.empty()) set_header(cancel.properties, "x-reply-to", reply_to);
    return cancel;
}

ReceiptAndReleases split_receipts(const std::vector<Received>& received) {
    ReceiptAndReleases split;
    for (const auto& r : received) {
        if (r.message.properties.content_type == "application/json") split.receipt = parse_receipt(r);
        else split.releases.push_back(r);
    }
    return split;
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
