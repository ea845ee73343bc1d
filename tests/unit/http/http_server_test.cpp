// The HTTP endpoint (src/http/http_server.hpp) on a free local port: the three paths, their
// status codes and content types, and the listen address syntax of --http.
#include "http/http_server.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>

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

}  // namespace
}  // namespace hourglass::http
