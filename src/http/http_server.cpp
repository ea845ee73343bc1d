#include "http/http_server.hpp"

#include <httplib.h>

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <stdexcept>

#include "common/metrics.hpp"

namespace hourglass::http {

ListenAddress parse_listen_address(std::string_view text) {
    const auto invalid = [&] {
        return std::invalid_argument("'" + std::string(text) +
                                     "' is not host:port (e.g. 127.0.0.1:9464 or [::1]:9464)");
    };
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos || colon == 0) throw invalid();
    auto host = text.substr(0, colon);
    if (host.front() == '[') {
        if (host.size() < 3 || host.back() != ']') throw invalid();
        host = host.substr(1, host.size() - 2);
    } else if (host.find(':') != std::string_view::npos) {
        throw invalid();  // an IPv6 address needs brackets
    }
    const auto port_text = text.substr(colon + 1);
    int port = -1;
    const auto [end, error] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (error != std::errc{} || end != port_text.data() + port_text.size() || port < 0 ||
        port > 65535) {
        throw invalid();
    }
    return {std::string(host), port};
}

namespace {

bool equal_ignoring_case(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
        return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
    });
}

bool is_ip_literal(const std::string& host) {
    unsigned char address[16];
    return inet_pton(AF_INET, host.c_str(), address) == 1 ||
           inet_pton(AF_INET6, host.c_str(), address) == 1;
}

}  // namespace

bool HostPolicy::allows(std::string_view host_header) const {
    if (host_header.empty()) return true;
    // "name", "name:port", "[v6]", "[v6]:port".
    std::string_view host = host_header;
    if (host.front() == '[') {
        const auto close = host.find(']');
        if (close == std::string_view::npos) return false;
        const auto rest = host.substr(close + 1);
        if (!rest.empty() && rest.front() != ':') return false;
        host = host.substr(1, close - 1);
    } else if (const auto colon = host.find(':'); colon != std::string_view::npos) {
        host = host.substr(0, colon);
    }
    if (host.empty()) return false;
    if (is_ip_literal(std::string(host))) return true;
    if (equal_ignoring_case(host, "localhost") || equal_ignoring_case(host, listen_host)) return true;
    return std::any_of(allowed_names.begin(), allowed_names.end(),
                       [&](const std::string& name) { return equal_ignoring_case(host, name); });
}

std::optional<int> refused_body_status(bool has_transfer_encoding,
                                       std::optional<std::uint64_t> content_length) {
    if (has_transfer_encoding) return 411;  // Length Required
    if (content_length && *content_length > kMaxRequestBodyBytes) return 413;  // Content Too Large
    return std::nullopt;
}

namespace {

using Clock = std::chrono::steady_clock;

// A connection's socket under one deadline for the request being served, besides each read's
// and write's own timeout (ConnectionLimits).
class DeadlineStream final : public httplib::Stream {
public:
    DeadlineStream(socket_t socket, std::chrono::milliseconds io_timeout)
        : socket_(socket), io_timeout_(io_timeout) {}

    // Waits up to `wait` for the first byte of the next request; false: none came.
    bool wait_for_request(std::chrono::milliseconds wait) {
        deadline_ = Clock::now() + wait;
        return is_readable();
    }
    void serve_until(Clock::time_point deadline) { deadline_ = deadline; }

    bool is_readable() const override { return ready_for(POLLIN); }
    bool is_writable() const override { return ready_for(POLLOUT); }
    ssize_t read(char* data, size_t size) override {
        if (!is_readable()) return -1;
        return retry_on_interrupt([&] { return ::recv(socket_, data, size, 0); });
    }
    ssize_t write(const char* data, size_t size) override {
        if (!is_writable()) return -1;
        return retry_on_interrupt([&] { return ::send(socket_, data, size, MSG_NOSIGNAL); });
    }
    void get_remote_ip_and_port(std::string& ip, int& port) const override {
        address_of(::getpeername, ip, port);
    }
    void get_local_ip_and_port(std::string& ip, int& port) const override {
        address_of(::getsockname, ip, port);
    }
    socket_t socket() const override { return socket_; }

private:
    template <typename Call>
    static ssize_t retry_on_interrupt(Call call) {
        ssize_t result = 0;
        do {
            result = call();
        } while (result < 0 && errno == EINTR);
        return result;
    }
    // Whether the socket is ready within its I/O timeout and before the deadline.
    bool ready_for(short events) const {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
        const auto wait = std::min(io_timeout_, left);
        if (wait.count() <= 0) return false;
        pollfd poll_fd{socket_, events, 0};
        int ready = 0;
        do {
            ready = ::poll(&poll_fd, 1, static_cast<int>(wait.count()));
        } while (ready < 0 && errno == EINTR);
        return ready > 0;
    }
    template <typename Lookup>
    void address_of(Lookup lookup, std::string& ip, int& port) const {
        sockaddr_storage address{};
        socklen_t length = sizeof address;
        if (lookup(socket_, reinterpret_cast<sockaddr*>(&address), &length) != 0) return;
        char text[INET6_ADDRSTRLEN] = {};
        if (address.ss_family == AF_INET) {
            const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
            inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
            port = ntohs(v4.sin_port);
        } else if (address.ss_family == AF_INET6) {
            const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
            inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
            port = ntohs(v6.sin6_port);
        }
        ip = text;
    }

    socket_t socket_;
    std::chrono::milliseconds io_timeout_;
    Clock::time_point deadline_{};
};

// Set while the accept thread runs a connection it sheds (BoundedQueue): the connection is
// answered 503 and closed, unread.
thread_local bool shedding_connection = false;

// httplib's pool of workers, with at most `max_waiting` connections waiting for one: httplib
// queues every accepted connection, without bound. One over the bound runs at once on the
// accept thread, which only answers it 503 (BoundedServer).
class BoundedQueue final : public httplib::TaskQueue {
public:
    explicit BoundedQueue(ConnectionLimits limits) : pool_(limits.workers), max_waiting_(limits.max_waiting) {}

    void enqueue(std::function<void()> connection) override {
        if (waiting_.load() >= max_waiting_) {
            shedding_connection = true;
            connection();
            shedding_connection = false;
            return;
        }
        ++waiting_;
        pool_.enqueue([this, connection = std::move(connection)] {
            --waiting_;
            connection();
        });
    }
    void shutdown() override { pool_.shutdown(); }

private:
    httplib::ThreadPool pool_;
    const std::size_t max_waiting_;
    std::atomic<std::size_t> waiting_{0};
};

// httplib's server, with each connection served under ConnectionLimits: httplib bounds each
// read and write, not a request, and offers no hook on an accepted socket but this one.
class BoundedServer final : public httplib::Server {
public:
    explicit BoundedServer(ConnectionLimits limits) : limits_(limits) {}

private:
    bool process_and_close_socket(socket_t socket) override {
        if (shedding_connection) {
            static constexpr std::string_view kBusy =
                "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
                "Content-Length: 45\r\nConnection: close\r\n\r\n"
                "too many connections to this endpoint: retry\n";
            ::send(socket, kBusy.data(), kBusy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
            ::shutdown(socket, SHUT_RDWR);
            ::close(socket);
            return false;
        }
        DeadlineStream stream(socket, std::chrono::seconds{kRequestIoTimeoutSeconds});
        bool served = false;
        for (auto left = keep_alive_max_count_; left > 0 && svr_sock_ != INVALID_SOCKET; --left) {
            if (!stream.wait_for_request(limits_.first_byte_wait)) break;
            stream.serve_until(Clock::now() + limits_.request_deadline);
            bool connection_closed = false;
            served = process_request(stream, left == 1, connection_closed, nullptr);
            if (!served || connection_closed) break;
        }
        ::shutdown(socket, SHUT_RDWR);
        ::close(socket);
        return served;
    }

    ConnectionLimits limits_;
};

}  // namespace

HttpServer::HttpServer(const ListenAddress& address, Endpoints endpoints)
    : server_(std::make_unique<BoundedServer>(endpoints.limits)) {
    // A scrape or a probe is tiny; the console's requests take one database connection in
    // turn. Several workers keep a scrape from waiting behind a page's requests, and each
    // client holds one for a bounded time (ConnectionLimits).
    server_->new_task_queue = [limits = endpoints.limits] { return new BoundedQueue(limits); };
    // httplib's default sets SO_REUSEPORT, which lets a second process bind the same port and
    // silently take half the scrapes. SO_REUSEADDR alone still allows a quick restart.
    server_->set_socket_options([](socket_t socket) {
        const int yes = 1;
        setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    // Bounds on what a client holds: a body's size (below, and for a declared length here too),
    // and each read and write of a request.
    server_->set_payload_max_length(kMaxRequestBodyBytes);
    server_->set_read_timeout(kRequestIoTimeoutSeconds, 0);
    server_->set_write_timeout(kRequestIoTimeoutSeconds, 0);
    // Checked before any route, and before a body is read: no endpoint answers a rebound name,
    // and no body of unbounded size is read into memory.
    server_->set_pre_routing_handler(
        [policy = HostPolicy{address.host, endpoints.allowed_hosts}](
            const httplib::Request& request, httplib::Response& response) {
            if (!policy.allows(request.get_header_value("Host"))) {
                response.status = 421;  // Misdirected Request
                response.set_content("this endpoint does not answer for that Host; allow the name "
                                     "with --http-allow-host\n",
                                     "text/plain; charset=utf-8");
                return httplib::Server::HandlerResponse::Handled;
            }
            const auto length = request.has_header("Content-Length")
                                    ? std::optional<std::uint64_t>(
                                          request.get_header_value<std::uint64_t>("Content-Length"))
                                    : std::nullopt;
            if (const auto status =
                    refused_body_status(request.has_header("Transfer-Encoding"), length)) {
                response.status = *status;
                response.set_header("Connection", "close");
                response.set_content("a request body holds at most " +
                                         std::to_string(kMaxRequestBodyBytes) +
                                         " bytes, with a Content-Length\n",
                                     "text/plain; charset=utf-8");
                return httplib::Server::HandlerResponse::Handled;
            }
            return httplib::Server::HandlerResponse::Unhandled;
        });
    server_->Get("/metrics", [metrics = endpoints.metrics](const httplib::Request&,
                                                           httplib::Response& response) {
        response.set_content(metrics(), std::string(metrics::kPrometheusContentType).c_str());
    });
    server_->Get("/healthz", [](const httplib::Request&, httplib::Response& response) {
        response.set_content("ok\n", "text/plain; charset=utf-8");
    });
    server_->Get("/readyz", [readiness_problem = endpoints.readiness_problem](
                                const httplib::Request&, httplib::Response& response) {
        if (const auto problem = readiness_problem()) {
            response.status = 503;
            response.set_content(*problem + "\n", "text/plain; charset=utf-8");
        } else {
            response.set_content("ready\n", "text/plain; charset=utf-8");
        }
    });
    if (endpoints.add_routes) endpoints.add_routes(*server_);

    port_ = address.port == 0
                ? server_->bind_to_any_port(address.host)
                : (server_->bind_to_port(address.host, address.port) ? address.port : -1);
    if (port_ <= 0) {
        throw std::runtime_error("cannot listen for HTTP on " + address.host + ":" +
                                 std::to_string(address.port) +
                                 " (address in use or not local? --http \"\" turns HTTP off)");
    }
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    // stop() only ends a server that is already running: wait for it, so that destroying this
    // object right away cannot leave the thread listening forever.
    while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds{1});
}

HttpServer::~HttpServer() {
    server_->stop();
    if (thread_.joinable()) thread_.join();
}

}  // namespace hourglass::http
