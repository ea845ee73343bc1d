// The operations endpoint (reference §9), served by cpp-httplib in its own threads:
//   GET /metrics  the Prometheus text exposition format
//   GET /healthz  200 "ok" while the process serves HTTP at all
//   GET /readyz   200 "ready", or 503 with a short plain-text reason
// and whatever further routes are added (the console, src/console/).
// What the endpoints answer comes from functions given at construction, called per request.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

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

struct Endpoints {
    std::function<std::string()> metrics;                           // body of /metrics
    std::function<std::optional<std::string>()> readiness_problem;  // nothing: ready
    std::function<void(httplib::Server&)> add_routes;                // may be empty
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
