// The HTTP endpoint (src/http/http_server.hpp) on a free local port: the three paths, their
// status codes and content types, and the listen address syntax of --http.
#include "http/http_server.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "common/metrics.hpp"

namespace hourglass::http {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ParseListenAddress, host_and_port) {
    const auto address = parse_listen_address("127.0.0.1:9464");
    EXPECT_EQ(address.host, "127.0.0.1");
    EXPECT_EQ(address.port, 9464);
    EXPECT_EQ(parse_listen_address("0.0.0.0:80").host, "0.0.0.0");
    EXPECT_EQ(parse_listen_address("localhost:0").port, 0);
}

TEST(ParseListenAddress, ipv6_in_brackets) {
    const auto address = parse_listen_address("[::1]:9464");
    EXPECT_EQ(address.host, "::1");
    EXPECT_EQ(address.port, 9464);
}

TEST(ParseListenAddress, malformed_addresses_are_refused_naming_the_text) {
    for (const std::string text : {"9464", ":9464", "host:", "host:port", "host:65536", "host:-1",
                                   "::1:9464", "[::1:9464", "[]:1", "host:12x"}) {
        SCOPED_TRACE(text);
        try {
            parse_listen_address(text);
            ADD_FAILURE() << "accepted";
        } catch (const std::invalid_argument& error) {
            EXPECT_THAT(error.what(), HasSubstr("'" + text + "'"));
        }
    }
}

TEST(HostPolicy, answers_its_address_ip_literals_localhost_and_allowed_names) {
    const HostPolicy policy{"hourglass.internal", {"console.example.com"}};
    for (const std::string host : {"", "127.0.0.1", "127.0.0.1:9464", "10.1.2.3:80", "[::1]",
                                   "[::1]:9464", "localhost", "LOCALHOST:9464",
                                   "hourglass.internal:9464", "Console.Example.com"}) {
        SCOPED_TRACE(host);
        EXPECT_TRUE(policy.allows(host));
    }
}

TEST(HostPolicy, refuses_any_other_name_as_dns_rebinding) {
    const HostPolicy policy{"127.0.0.1", {"console.example.com"}};
    for (const std::string host : {"attacker.example", "attacker.example:9464",
                                   "console.example.com.evil", "localhost.evil", "[::1",
                                   "[::1]x", ":9464", "127.0.0.1.nip.io"}) {
        SCOPED_TRACE(host);
        EXPECT_FALSE(policy.allows(host));
    }
}

class HttpServerTest : public ::testing::Test {
protected:
    HttpServerTest()
        : server_({"127.0.0.1", 0},
                  Endpoints{[] { return std::string("# HELP x y\n# TYPE x gauge\nx 1\n"); },
                            [this]() -> std::optional<std::string> {
                                if (ready_) return std::nullopt;
                                return std::string("not ready: broker");
                            },
                            {}}),
          client_("127.0.0.1", server_.port()) {}

    std::atomic<bool> ready_{false};
    HttpServer server_;
    httplib::Client client_;
};

TEST_F(HttpServerTest, healthz_answers_ok) {
    const auto response = client_.Get("/healthz");
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "ok\n");
}

TEST_F(HttpServerTest, readyz_is_503_with_the_reason_until_ready) {
    auto response = client_.Get("/readyz");
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 503);
    EXPECT_EQ(response->body, "not ready: broker\n");
    EXPECT_THAT(response->get_header_value("Content-Type"), StartsWith("text/plain"));
    ready_ = true;
    response = client_.Get("/readyz");
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "ready\n");
}

TEST_F(HttpServerTest, metrics_has_the_prometheus_content_type) {
    const auto response = client_.Get("/metrics");
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->get_header_value("Content-Type"), metrics::kPrometheusContentType);
    EXPECT_EQ(response->body, "# HELP x y\n# TYPE x gauge\nx 1\n");
}

TEST_F(HttpServerTest, other_paths_are_not_found) {
    const auto response = client_.Get("/nothing");
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 404);
}

TEST(HttpServer, a_taken_port_is_a_clear_error) {
    const HttpServer first(
        {"127.0.0.1", 0},
        Endpoints{[] { return std::string(); }, [] { return std::optional<std::string>(); }, {}});
    try {
        const HttpServer second(
            {"127.0.0.1", first.port()},
            Endpoints{[] { return std::string(); }, [] { return std::optional<std::string>(); }, {}});
        ADD_FAILURE() << "bound a port already in use";
    } catch (const std::runtime_error& error) {
        EXPECT_THAT(error.what(), HasSubstr("127.0.0.1:" + std::to_string(first.port())));
    }
}

TEST(HttpServer, stops_at_once_when_destroyed) {
    const auto started = std::chrono::steady_clock::now();
    for (int i = 0; i < 5; ++i) {
        const HttpServer server(
            {"127.0.0.1", 0},
            Endpoints{[] { return std::string(); }, [] { return std::optional<std::string>(); }, {}});
    }
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds{5});
}

TEST_F(HttpServerTest, a_request_for_another_host_name_is_refused_on_every_path) {
    for (const std::string path : {"/metrics", "/healthz", "/readyz", "/"}) {
        SCOPED_TRACE(path);
        const auto refused = client_.Get(path, {{"Host", "rebound.attacker.example:9464"}});
        ASSERT_TRUE(refused);
        EXPECT_EQ(refused->status, 421);
    }
    const auto answered = client_.Get("/healthz", {{"Host", "localhost:9464"}});
    ASSERT_TRUE(answered);
    EXPECT_EQ(answered->status, 200);
}

TEST(RefusedBodyStatus, a_body_of_unknown_or_excessive_length_is_refused_before_it_is_read) {
    EXPECT_EQ(refused_body_status(true, std::nullopt), 411);
    EXPECT_EQ(refused_body_status(true, 10), 411);
    EXPECT_EQ(refused_body_status(false, kMaxRequestBodyBytes + 1), 413);
    EXPECT_EQ(refused_body_status(false, kMaxRequestBodyBytes), std::nullopt);
    EXPECT_EQ(refused_body_status(false, std::nullopt), std::nullopt);
}

// Sends `head`, then up to `body_bytes` of body (as long as the server reads), and returns the
// status line of the answer, "" if none came.
// A TCP connection to the server on loopback; -1 if it cannot be made.
int connect_to(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

std::string raw_exchange(int port, const std::string& head, std::size_t body_bytes) {
    const int fd = connect_to(port);
    if (fd < 0) return "";
    timeval timeout{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    const std::string chunk = "10000\r\n" + std::string(0x10000, 'x') + "\r\n";
    for (std::size_t sent = 0; sent < body_bytes; sent += 0x10000) {
        if (::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) < 0) break;  // closed on us
    }
    char answer[256] = {};
    const auto got = ::recv(fd, answer, sizeof answer - 1, 0);
    ::close(fd);
    if (got <= 0) return "";
    const std::string text(answer, static_cast<std::size_t>(got));
    return text.substr(0, text.find("\r\n"));
}

// A POST with a chunked body of 64 MB to a route of the console's kind: read whole into memory
// before any handler could refuse it (a 300 MB one grew hourglass to 608 MB). Now refused
// before its body is read.
TEST(HttpServer, a_request_body_of_unknown_or_excessive_length_is_refused_unread) {
    std::atomic<int> handled{0};
    const HttpServer server(
        {"127.0.0.1", 0},
        Endpoints{[] { return std::string(); }, [] { return std::optional<std::string>(); },
                  [&](httplib::Server& routes) {
                      routes.Post("/api/cancel", [&](const httplib::Request&, httplib::Response& r) {
                          ++handled;
                          r.set_content("ok", "text/plain");
                      });
                  }});
    const auto started = std::chrono::steady_clock::now();
    EXPECT_EQ(raw_exchange(server.port(),
                           "POST /api/cancel HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n",
                           64u << 20),
              "HTTP/1.1 411 Length Required");
    EXPECT_EQ(raw_exchange(server.port(),
                           "POST /api/cancel HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           "Content-Length: 314572800\r\n\r\n",
                           0),
              "HTTP/1.1 413 Payload Too Large");
    EXPECT_EQ(handled.load(), 0);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds{5});
    // A body within the bound is served as before.
    httplib::Client client("127.0.0.1", server.port());
    const auto answered = client.Post("/api/cancel", "id=a", "application/x-www-form-urlencoded");
    ASSERT_TRUE(answered);
    EXPECT_EQ(answered->status, 200);
    EXPECT_EQ(handled.load(), 1);
}

// A client that sends its request a byte every 100 ms, each read within its timeout: how long
// until the server closes the connection (or `give_up`, if it never does).
std::chrono::milliseconds trickle_until_closed(int port, std::chrono::milliseconds give_up) {
    const auto started = std::chrono::steady_clock::now();
    const int fd = connect_to(port);
    if (fd < 0) return std::chrono::milliseconds{0};
    const std::string head = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + std::string(1000, 'x');
    for (std::size_t i = 0; std::chrono::steady_clock::now() - started < give_up; ++i) {
        char byte = 0;
        if (::recv(fd, &byte, 1, MSG_DONTWAIT) == 0) break;  // closed by the server
        if (::send(fd, &head[i % head.size()], 1, MSG_NOSIGNAL) < 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds{100});
    }
    ::close(fd);
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
}

// Clients that send their request a byte at a time, each byte within the read timeout
// (slowloris), held a worker each for as long as they liked: four of them stopped /metrics and
// /readyz. Each request now has a deadline; the trickling clients are cut at it, and a probe
// sent while they hold every worker is answered once one is cut.
TEST(HttpServer, requests_trickled_a_byte_at_a_time_are_cut_at_their_deadline) {
    using namespace std::chrono_literals;
    const HttpServer server({"127.0.0.1", 0},
                            Endpoints{[] { return std::string(); },
                                      [] { return std::optional<std::string>(); },
                                      {},
                                      {},
                                      ConnectionLimits{.workers = 2,
                                                       .max_waiting = 64,
                                                       .first_byte_wait = 2000ms,
                                                       .request_deadline = 500ms}});
    std::vector<std::future<std::chrono::milliseconds>> trickles;
    for (int i = 0; i < 2; ++i) {
        trickles.push_back(std::async(std::launch::async, [&] { return trickle_until_closed(server.port(), 6s); }));
    }
    std::this_thread::sleep_for(200ms);  // both workers taken
    httplib::Client client("127.0.0.1", server.port());
    const auto asked = std::chrono::steady_clock::now();
    const auto answered = client.Get("/readyz");
    ASSERT_TRUE(answered);
    EXPECT_EQ(answered->status, 200);
    EXPECT_LT(std::chrono::steady_clock::now() - asked, 2s) << "the probe waited behind the trickles";
    for (auto& trickle : trickles) EXPECT_LT(trickle.get(), 2s) << "a trickled request outlived its deadline";
}

// Every accepted connection waited in httplib's queue for a worker, without bound: enough
// clients grew the server's memory and file handles as they liked. Beyond `max_waiting` a
// connection is answered 503 at once. With one worker and one place to wait, of five quick
// connections that send nothing, at most two are not answered 503, whatever the order the
// worker takes them in.
TEST(HttpServer, connections_beyond_the_workers_and_the_waiting_room_are_answered_503_at_once) {
    using namespace std::chrono_literals;
    const HttpServer server({"127.0.0.1", 0},
                            Endpoints{[] { return std::string(); },
                                      [] { return std::optional<std::string>(); },
                                      {},
                                      {},
                                      ConnectionLimits{.workers = 1,
                                                       .max_waiting = 1,
                                                       .first_byte_wait = 500ms,
                                                       .request_deadline = 500ms}});
    std::vector<int> sockets;
    for (int i = 0; i < 5; ++i) {
        const int fd = connect_to(server.port());
        ASSERT_GE(fd, 0);
        timeval timeout{0, 200000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        sockets.push_back(fd);
    }
    int busy = 0;
    for (const int fd : sockets) {
        char answer[64] = {};
        if (::recv(fd, answer, sizeof answer - 1, 0) > 0 &&
            std::string_view(answer).starts_with("HTTP/1.1 503")) {
            ++busy;
        }
        ::close(fd);
    }
    EXPECT_GE(busy, 3);
    httplib::Client client("127.0.0.1", server.port());
    const auto answered = client.Get("/healthz");
    ASSERT_TRUE(answered) << "the server stopped serving";
    EXPECT_EQ(answered->status, 200);
}

}  // namespace
}  // namespace hourglass::http
