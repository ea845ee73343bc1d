// The console's routes without a database: the page and its headers, the refusals that need no
// query (no token configured, missing or wrong token, bad input), and a database that cannot be
// reached, which answers 503 without any secret.
#include "console/console.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "http/http_server.hpp"

namespace hourglass::console {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kToken = "operator-token-0123456789";
constexpr const char* kPassword = "pg-password-never-shown";

class ConsoleRoutes : public ::testing::Test {
protected:
    explicit ConsoleRoutes(std::string token = kToken, ConsoleMode mode = ConsoleMode::write,
                           std::string read_token = "")
        : console_({.store = {"postgresql://hourglass:" + std::string(kPassword) +
                              "@127.0.0.1:1/hourglass?connect_timeout=2"},
                    .mode = mode,
                    .token = std::move(token),
                    .read_token = std::move(read_token)}),
          server_({"127.0.0.1", 0},
                  http::Endpoints{[] { return std::string(); },
                                  [] { return std::optional<std::string>(); },
                                  [this](httplib::Server& server) { console_.add_routes(server); }}),
          client_("127.0.0.1", server_.port()) {}

    httplib::Result cancel(const std::string& id, const char* token) {
        httplib::Headers headers;
        if (token) headers.emplace(std::string(kTokenHeader), token);
        return client_.Post(("/api/cancel?id=" + id).c_str(), headers, "", "text/plain");
    }

    Console console_;
    http::HttpServer server_;
    httplib::Client client_;
};

TEST_F(ConsoleRoutes, ServesThePageWithAPolicyThatAllowsOnlyItsOwnScript) {
    const auto page = client_.Get("/");
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 200);
    EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
    EXPECT_THAT(page->body, HasSubstr("<script src=\"/app.js\""));
    EXPECT_THAT(page->get_header_value("Content-Security-Policy"), HasSubstr("script-src 'self'"));
    EXPECT_EQ(page->get_header_value("X-Content-Type-Options"), "nosniff");
    const auto script = client_.Get("/app.js");
    ASSERT_TRUE(script);
    EXPECT_EQ(script->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
}

TEST_F(ConsoleRoutes, CancelNeedsTheTokenAndIsNeverAGet) {
    const auto missing = cancel("job-1", nullptr);
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 401);
    EXPECT_EQ(cancel("job-1", "operator-token-012345678")->status, 401);  // one character short
    EXPECT_EQ(cancel("job-1", "")->status, 401);
    EXPECT_NE(client_.Get("/api/cancel?id=job-1")->status, 200);
}

TEST_F(ConsoleRoutes, RefusesMissingEmptyOrOversizedIdsAndSearches) {
    EXPECT_EQ(client_.Post("/api/cancel", "", "text/plain")->status, 400);
    EXPECT_EQ(cancel(std::string(256, 'x'), kToken)->status, 400);
    EXPECT_EQ(client_.Get("/api/search")->status, 400);
    EXPECT_EQ(client_.Get("/api/search?q=")->status, 400);
    EXPECT_EQ(client_.Get("/api/search?q=%C3%28")->status, 400);  // not UTF-8
}

TEST_F(ConsoleRoutes, AnUnreachableDatabaseIs503WithoutSecrets) {
    for (const auto* path : {"/api/summary", "/api/upcoming", "/api/lateness", "/api/rejections",
                             "/api/cron", "/api/search?q=x"}) {
        const auto answer = client_.Get(path);
        ASSERT_TRUE(answer) << path;
        EXPECT_EQ(answer->status, 503) << path;
        EXPECT_THAT(answer->body, HasSubstr("\"error\"")) << path;
        EXPECT_THAT(answer->body, Not(HasSubstr(kPassword))) << path;
        EXPECT_THAT(answer->body, Not(HasSubstr(kToken))) << path;
    }
    const auto cancelled = cancel("job-1", kToken);  // the right token: on to the database
    EXPECT_EQ(cancelled->status, 503);
    EXPECT_THAT(cancelled->body, Not(HasSubstr(kPassword)));
}

class ReadOnlyConsoleRoutes : public ConsoleRoutes {
protected:
    ReadOnlyConsoleRoutes() : ConsoleRoutes("") {}
};

TEST_F(ReadOnlyConsoleRoutes, CancelIsOffWhateverTheHeader) {
    const auto refused = cancel("job-1", "");
    EXPECT_EQ(refused->status, 403);
    EXPECT_THAT(refused->body, HasSubstr("--console-token"));
    EXPECT_EQ(cancel("job-1", kToken)->status, 403);
}

// --console read: no change whatever the token; the reads go on (to the database, here none).
class ReadModeConsoleRoutes : public ConsoleRoutes {
protected:
    ReadModeConsoleRoutes() : ConsoleRoutes(kToken, ConsoleMode::read) {}
};

TEST_F(ReadModeConsoleRoutes, RefusesEveryChangeEvenWithTheToken) {
    const auto refused = cancel("job-1", kToken);
    EXPECT_EQ(refused->status, 403);
    EXPECT_THAT(refused->body, HasSubstr("--console read"));
    EXPECT_EQ(client_.Get("/api/summary")->status, 503) << "reads need no token: on to the database";
}

// --console-read-token: every /api/ read needs it (or the operator token); the page does not.
class ReadTokenConsoleRoutes : public ConsoleRoutes {
protected:
    static constexpr const char* kReadToken = "read-token-0123456789";
    ReadTokenConsoleRoutes() : ConsoleRoutes(kToken, ConsoleMode::write, kReadToken) {}
    int get(const std::string& path, const char* token) {
        httplib::Headers headers;
        if (token) headers.emplace("X-Hourglass-Token", token);
        return client_.Get(path.c_str(), headers)->status;
    }
};

TEST_F(ReadTokenConsoleRoutes, ReadsNeedTheReadOrTheOperatorToken) {
    for (const auto* path : {"/api/summary", "/api/upcoming", "/api/lateness", "/api/rejections",
                             "/api/cron", "/api/search?q=x", "/api/cancel-prefix?prefix=x"}) {
        EXPECT_EQ(get(path, nullptr), 401) << path;
        EXPECT_EQ(get(path, "read-token-012345678"), 401) << path;  // one character short
        EXPECT_EQ(get(path, kReadToken), 503) << path;  // allowed: on to the (absent) database
        EXPECT_EQ(get(path, kToken), 503) << path;
    }
    EXPECT_EQ(get("/", nullptr), 200) << "the page holds no data";
    EXPECT_EQ(cancel("job-1", kReadToken)->status, 401) << "the read token changes nothing";
}

TEST(ConsoleModeNames, AreOffReadAndWrite) {
    EXPECT_EQ(parse_console_mode("off"), ConsoleMode::off);
    EXPECT_EQ(parse_console_mode("read"), ConsoleMode::read);
    EXPECT_EQ(parse_console_mode("write"), ConsoleMode::write);
    EXPECT_THROW(parse_console_mode("rw"), std::invalid_argument);
}

}  // namespace
}  // namespace hourglass::console
