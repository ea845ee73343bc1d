// The operations endpoint (reference §9), served by cpp-httplib in its own threads:
//   GET /metrics  the Prometheus text exposition format
//   GET /healthz  200 "ok" while the process serves HTTP at all
//   GET /readyz   200 "ready", or 503 with a short plain-text reason
// and whatever further routes are added (the console, src/console/).
// What the endpoints answer comes from functions given at construction, called per request.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace httplib {
class Server;
}

namespace hourglass::http {

struct ListenAddress {
    std::string host;
    int port = 0;  // 0: any free port (see HttpServer::port)
};

// "host:port", "[ipv6]:port"; throws std::invalid_argument naming the text.
ListenAddress parse_listen_address(std::string_view text);

// Which `Host` headers the endpoint answers (no DNS rebinding: a web page on a name the
// attacker controls, resolved to this address, must not read /api/search). Answered: no Host
// at all (not a browser), an IP address literal (its origin is the address itself), the listen
// host, `localhost`, and the names the operator allows (--http-allow-host), each with or
// without a port. Names compare case-insensitively.
struct HostPolicy {
    std::string listen_host;
    std::vector<std::string> allowed_names;
    bool allows(std::string_view host_header) const;
};

// What a request may carry: the console's API takes bodies of a few hundred bytes.
inline constexpr std::size_t kMaxRequestBodyBytes = 64 * 1024;
// How long the server waits for each read or write of a request or response.
inline constexpr int kRequestIoTimeoutSeconds = 5;

// The status a request is refused with before a byte of its body is read, or nothing: 411 for a
// body of unknown length (Transfer-Encoding: a chunked body is read whole before a handler could
// refuse it), 413 for a declared length over kMaxRequestBodyBytes.
std::optional<int> refused_body_status(bool has_transfer_encoding,
                                       std::optional<std::uint64_t> content_length);

// What one client may hold of the endpoint: a worker (of `workers`) for at most
// `first_byte_wait` before its request begins, then `request_deadline` for the whole request
// and its response, whatever pace it keeps (each read and write also has its own
// kRequestIoTimeoutSeconds). A client that sends a byte every few seconds kept each read within
// its timeout, and so held a worker for as long as it liked.
// Connections beyond `workers` wait for one, `max_waiting` at most: any more are answered 503
// at once and closed, so that no number of clients grows the server's memory or file handles.
struct ConnectionLimits {
    std::size_t workers = 8;
    std::size_t max_waiting = 64;
    std::chrono::milliseconds first_byte_wait{2000};
    std::chrono::milliseconds request_deadline{5000};
};

struct Endpoints {
    std::function<std::string()> metrics;                           // body of /metrics
    std::function<std::optional<std::string>()> readiness_problem;  // nothing: ready
    std::function<void(httplib::Server&)> add_routes;                // may be empty
    // Host names allowed besides the listen address and IP literals (HostPolicy).
    std::vector<std::string> allowed_hosts = {};
    ConnectionLimits limits = {};
};

class HttpServer {
public:
    // Binds at once (throws std::runtime_error if the address cannot be bound) and serves until
    // destroyed.
    HttpServer(const ListenAddress& address, Endpoints endpoints);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    int port() const noexcept { return port_; }

private:
    std::unique_ptr<httplib::Server> server_;
    int port_ = 0;
    std::thread thread_;
};

}  // namespace hourglass::http
