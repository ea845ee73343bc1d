#include "console/console.hpp"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "common/text.hpp"
#include "console/console_assets.hpp"
#include "console/console_data.hpp"
#include "console/console_views.hpp"
#include "hourglass/properties_json.hpp"
#include "store/errors.hpp"

namespace hourglass::console {

using nlohmann::json;

namespace {

constexpr const char* kJson = "application/json; charset=utf-8";

// The page loads only its own files and talks only to its own origin; nothing may frame it.
void add_security_headers(httplib::Response& response) {
    response.set_header("Content-Security-Policy",
                        "default-src 'none'; script-src 'self'; style-src 'self'; "
                        "connect-src 'self'; img-src 'self'; frame-ancestors 'none'; "
                        "base-uri 'none'; form-action 'none'");
    response.set_header("X-Content-Type-Options", "nosniff");
    response.set_header("Referrer-Policy", "no-referrer");
    response.set_header("Cache-Control", "no-store");
}

json error_json(std::string_view message) { return {{"error", message}}; }

json summary_json(const std::optional<http::StatsRefresher::Reading>& reading) {
    if (!reading) return nullptr;
    const auto& stats = reading->stats;
    const auto optional_ms = [](const std::optional<double>& value) {
        return value ? json(*value) : json(nullptr);
    };
    return {{"read_at", format_rfc3339_ms(reading->read_at)},
            {"pending", stats.pending},
            {"enqueued", stats.enqueued},
            {"done", stats.done},
            {"cancelled", stats.cancelled},
            {"paused", stats.paused},
            {"sql_commands_waiting", stats.sql_commands_waiting},
            {"oldest_pending_lag_ms", stats.oldest_pending_lag_ms},
            {"next_due_at", stats.next_due_at ? json(format_rfc3339_ms(*stats.next_due_at))
                                              : json(nullptr)},
            {"lateness_p50_ms", optional_ms(stats.lateness.p50_ms)},
            {"lateness_p99_ms", optional_ms(stats.lateness.p99_ms)},
            {"lateness_max_ms", optional_ms(stats.lateness.max_ms)},
            {"lateness_read_at", reading->lateness_read_at
                                     ? json(format_rfc3339_ms(*reading->lateness_read_at))
                                     : json(nullptr)}};
}

// A text a client sends to be looked up: a name (at most 255 bytes of UTF-8).
std::optional<std::string> lookup_text(const httplib::Request& request, const char* name) {
    if (!request.has_param(name)) return std::nullopt;
    auto value = request.get_param_value(name);
    if (value.empty() || value.size() > kMaxNameBytes || !is_storable_text(value)) {
        return std::nullopt;
    }
    return value;
}

}  // namespace

Console::Console(ConsoleOptions options) : options_(std::move(options)) {
    options_.store.open_connections = nullptr;  // not a pipeline component: not in /readyz
    options_.store.background = true;
}

Console::~Console() = default;

Console::Response Console::with_store(const std::function<json(ConsoleData&)>& use) {
    const std::lock_guard lock(store_mutex_);
    try {
        if (!store_) store_ = std::make_unique<ConsoleData>(store::open_console_store(options_.store));
        return {200, dump(use(*store_))};
    } catch (const std::exception& failure) {
        // The reason goes to the log only: an error text may name hosts or users.
        spdlog::warn("console: {}", printable(failure.what(), 300));
        store_.reset();
        return {503, dump(error_json("PostgreSQL is unavailable or the query failed; see the log"))};
    }
}

Console::Response Console::summary() {
    const auto stats = options_.stats ? options_.stats() : std::nullopt;
    return with_store([&](ConsoleData& store) -> json {
        return {{"stats", summary_json(stats)},
                {"instances", store.instances()},
                {"cancel_enabled", options_.mode == ConsoleMode::write && !options_.token.empty()},
                {"now", format_rfc3339_ms(options_.clock->now_ms())}};
    });
}

Console::Response Console::control(const Command& command, const std::string& what,
                                    const std::string* token) {
    if (options_.mode != ConsoleMode::write) {
        return {403, dump(error_json("changes are off: the console runs with --console read"))};
    }
    if (options_.token.empty()) {
        return {403, dump(error_json("changes are off: start hourglass with --console-token"))};
    }
    if (token == nullptr || !token_matches(*token, options_.token)) {
        return {401, dump(error_json("changes need the operator token in X-Hourglass-Token"))};
    }
    bool locked = false;
    auto response = with_store([&](ConsoleData& store) -> json {
        try {
            const auto outcome = store.apply(command);
            spdlog::info("console: {}: {}{}", what, to_string(outcome.status),
                         outcome.count ? " (" + std::to_string(*outcome.count) + " jobs)" : "");
            json answer = {{"status", to_string(outcome.status)},
                           {"error", outcome.error.empty() ? json(nullptr) : json(outcome.error)}};
            if (!command.id.empty()) answer["id"] = command.id;
            if (outcome.count) answer["count"] = *outcome.count;
            return answer;
        } catch (const std::exception& failure) {
            // The job's row, not the database, is at fault: say so, and keep the connection.
            if (store::classify_failure(failure) != store::FailureKind::busy) throw;
            locked = true;
            return {};
        }
    });
    if (!locked) return response;
    return {409, dump(error_json(what + ": a job's row is locked by another PostgreSQL "
                                 "transaction (an UPDATE left open?); try again once it ends"))};
}

namespace {

void reply(httplib::Response& response, const Console::Response& result) {
    add_security_headers(response);
    response.status = result.status;
    response.set_content(result.body, kJson);
}

Console::Response bad_request(std::string_view message) {
    return {400, dump(error_json(message))};
}

std::optional<std::string> token_of(const httplib::Request& request) {
    if (!request.has_header(std::string(kTokenHeader))) return std::nullopt;
    return request.get_header_value(std::string(kTokenHeader));
}

}  // namespace

bool Console::may_read(const std::string* token) const {
    if (options_.read_token.empty()) return true;
    return token != nullptr && (token_matches(*token, options_.read_token) ||
                                (!options_.token.empty() && token_matches(*token, options_.token)));
}

ConsoleMode parse_console_mode(std::string_view text) {
    if (text == "off") return ConsoleMode::off;
    if (text == "read") return ConsoleMode::read;
    if (text == "write") return ConsoleMode::write;
    throw std::invalid_argument("--console: '" + std::string(text) + "' is not off, read or write");
}

void Console::add_routes(httplib::Server& server) {
    if (options_.mode == ConsoleMode::off) return;
    add_read_routes(server);
    add_control_routes(server);
}

void Console::add_read(httplib::Server& server, const std::string& path,
                       std::function<Response(const httplib::Request&)> answer) {
    server.Get(path, [this, answer = std::move(answer)](const httplib::Request& request,
                                                        httplib::Response& response) {
        const auto token = token_of(request);
        if (!may_read(token ? &*token : nullptr)) {
            return reply(response, {401, dump(error_json("reads need the read token (or the "
                                                         "operator token) in X-Hourglass-Token"))});
        }
        reply(response, answer(request));
    });
}

void Console::add_read_routes(httplib::Server& server) {
    for (const auto& asset : console_assets()) {
        server.Get(std::string(asset.path), [&asset](const httplib::Request&, httplib::Response& response) {
            add_security_headers(response);
            response.set_content(std::string(asset.body), std::string(asset.content_type));
        });
    }
    add_read(server, "/api/summary", [this](const httplib::Request&) { return summary(); });
    add_read(server, "/api/upcoming", [this](const httplib::Request&) {
        const auto now = options_.clock->now_ms();
        return with_store([&](ConsoleData& store) -> json {
            return {{"minutes", store.upcoming(std::chrono::floor<std::chrono::minutes>(now),
                                               std::chrono::minutes{1}, 60)},
                    {"hours", store.upcoming(std::chrono::floor<std::chrono::hours>(now),
                                             std::chrono::hours{1}, 24)}};
        });
    });
    add_read(server, "/api/lateness", [this](const httplib::Request&) {
        return with_store([](ConsoleData& store) { return store.lateness(); });
    });
    add_read(server, "/api/rejections", [this](const httplib::Request&) {
        return with_store([](ConsoleData& store) { return store.rejections(); });
    });
    add_read(server, "/api/cron", [this](const httplib::Request&) {
        return with_store([](ConsoleData& store) { return store.cron_schedules(); });
    });
    add_read(server, "/api/search", [this](const httplib::Request& request) {
        const auto text = lookup_text(request, "q");
        if (!text) return bad_request("q: give 1 to 255 bytes of UTF-8 text");
        return with_store([&](ConsoleData& store) -> json {
            auto job = store.job(*text);
            return {{"job", job ? std::move(*job) : json(nullptr)},
                    {"by_routing_key_prefix", store.search_routing_key(*text)}};
        });
    });
    add_read(server, "/api/cancel-prefix", [this](const httplib::Request& request) {
        const auto prefix = lookup_text(request, "prefix");
        if (!prefix) return bad_request("prefix: give 1 to 255 bytes of UTF-8 text");
        return with_store([&](ConsoleData& store) -> json {
            const auto count = store.count_cancellable_by_prefix(*prefix);
            return {{"prefix", *prefix},
                    {"count", std::min(count, kCancelPrefixCountCap)},
                    {"more", count > kCancelPrefixCountCap}};
        });
    });
}

void Console::add_control_routes(httplib::Server& server) {
    // The changes: each the command a client would publish, applied the same way (reference §9).
    const auto add_job_control = [&](const std::string& path, std::string verb,
                                     std::function<decltype(Command::action)(std::string)> action) {
        server.Post(path, [this, verb, action](
                              const httplib::Request& request, httplib::Response& response) {
            const auto id = lookup_text(request, "id");
            if (!id) return reply(response, bad_request("id: give the job id (1 to 255 bytes of UTF-8)"));
            const auto token = token_of(request);
            // The console acts as an operator: no owner, on every job (reference §3.5).
            Command command;
            command.action = action(*id);
            command.id = *id;
            reply(response, control(command, verb + " of job " + quote_value(*id, 64),
                                    token ? &*token : nullptr));
        });
    };
    add_job_control("/api/cancel", "cancel", [](std::string id) { return CancelCommand{id}; });
    add_job_control("/api/pause", "pause", [](std::string id) { return PauseCommand{id, true}; });
    add_job_control("/api/resume", "resume", [](std::string id) { return PauseCommand{id, false}; });
    server.Post("/api/cancel-prefix", [this](
                                          const httplib::Request& request, httplib::Response& response) {
        const auto prefix = lookup_text(request, "prefix");
        if (!prefix) return reply(response, bad_request("prefix: give 1 to 255 bytes of UTF-8 text"));
        const auto token = token_of(request);
        Command command;
        command.action = CancelPrefixCommand{*prefix};
        reply(response, control(command, "cancel by prefix " + quote_value(*prefix, 64),
                                token ? &*token : nullptr));
    });
}

}  // namespace hourglass::console
