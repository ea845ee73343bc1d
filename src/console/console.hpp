// The console (reference §9): the page at / and its JSON under /api/, added to the HTTP endpoint.
//
//   GET  /                      the page (index.html, app.js, style.css, embedded)
//   GET  /api/summary           counts and lateness of the stats view (as last read by the
//                               stats refresher), running instances, whether cancel is on
//   GET  /api/upcoming          jobs due per minute for the next hour, per hour for the next day
//   GET  /api/lateness          histogram and p50/p99/max of the latest 1,000 releases
//   GET  /api/rejections        the latest 50 rejected commands with their reason
//   GET  /api/cron              recurring jobs with their next runs
//   GET  /api/search?q=TEXT     the job with id TEXT, and jobs whose routing key starts with it
//   GET  /api/cancel-prefix?prefix=P   how many jobs a cancel by prefix P would cancel now
//   POST /api/cancel?id=ID      cancel, with header X-Hourglass-Token (only when a token is set
//                               and the console is in write mode)
//   POST /api/pause?id=ID       pause a recurring job, likewise
//   POST /api/resume?id=ID      resume it, likewise
//   POST /api/cancel-prefix?prefix=P   cancel every job a cancel by prefix P cancels, likewise
//
// --console off adds no route (/metrics and the probes stay); read refuses every change; write
// (the default) allows changes with the operator token. With a read token, /api/ reads need it
// (or the operator token) in X-Hourglass-Token; the page's assets hold no data and need none.
// State changes are POST only. Requests are served one at a time over one PostgreSQL
// connection, opened on first use and again after a failure.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/database_clock.hpp"
#include "hourglass/command.hpp"
#include "http/stats_refresher.hpp"
#include "store/store_options.hpp"

namespace httplib {
class Server;
struct Request;
}

namespace hourglass::console {

class ConsoleData;

inline constexpr std::string_view kTokenHeader = "X-Hourglass-Token";

enum class ConsoleMode { off, read, write };
// "off", "read", "write"; throws std::invalid_argument naming the text.
ConsoleMode parse_console_mode(std::string_view text);

struct ConsoleOptions {
    store::StoreOptions store;
    ConsoleMode mode = ConsoleMode::write;
    std::string token;       // empty: read-only, cancel refused
    std::string read_token;  // empty: reads need no token
    // The latest read of the stats view; nothing before the first one.
    std::function<std::optional<http::StatsRefresher::Reading>()> stats;
    // The service's one clock: "now" and the upcoming minutes are on PostgreSQL's clock.
    std::shared_ptr<const DatabaseClock> clock = std::make_shared<DatabaseClock>();
};

class Console {
public:
    explicit Console(ConsoleOptions options);
    ~Console();
    Console(const Console&) = delete;
    Console& operator=(const Console&) = delete;

    // Adds the page and /api/ routes. The console must outlive the server.
    void add_routes(httplib::Server& server);

    // What one /api/ request answers: a status and a JSON body.
    struct Response {
        int status = 200;
        std::string body;
    };

private:
    // The page's assets and the reads of /api/ (summary, upcoming, lateness, rejections, cron,
    // search, the count before a cancel by prefix).
    void add_read_routes(httplib::Server& server);
    // The changes (cancel, pause, resume, cancel by prefix): each the command a client would
    // publish, applied the same way (reference §9), only with the token.
    void add_control_routes(httplib::Server& server);
    // Runs a read or write on the console's store; a failure answers 503 and drops the
    // connection, so the next request opens a new one.
    Response with_store(const std::function<nlohmann::json(ConsoleData&)>& use);
    Response summary();
    // Applies a control command (what: for the log and errors) if `token` is the operator's.
    Response control(const Command& command, const std::string& what, const std::string* token);
    // Whether `token` (the request's, if any) may read: always without a read token.
    bool may_read(const std::string* token) const;
    // Adds GET `path`, answered by `answer` for a request that may read, else 401.
    void add_read(httplib::Server& server, const std::string& path,
                  std::function<Response(const httplib::Request&)> answer);

    ConsoleOptions options_;
    std::mutex store_mutex_;
    std::unique_ptr<ConsoleData> store_;
};

}  // namespace hourglass::console
