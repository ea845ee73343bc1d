// What a confirmed, persistent publish costs the broker, by the shape of what is published: how
// many TTL queues the messages are spread over, how they reach them (--shape
// QUEUES:ROUTE:HEADERS, ROUTE one of `default` (the default exchange, routing key = queue),
// `fanout` (each queue behind a fanout exchange of its own, as hourglass's delay queues are),
// `direct` (one direct exchange, each queue bound by its name), `headers` (one headers exchange,
// each queue bound on a header naming it)), and whether the messages carry hourglass's three
// release headers. No hourglass, no database: the driver alone, so the broker's share of a
// loader's hand-over can be told apart from the rest.
//
// Each shape publishes --messages persistent messages over its queues, round-robin (consecutive
// messages to consecutive queues, like the loader's delay lanes) or with --blocks in one block
// per queue of each window, waiting for the confirms every --window publishes, into queues
// whose TTL (--ttl) outlasts the run; then deletes them. With --broker-pid it reads the
// broker's CPU time (/proc/PID/stat) before and after each shape. --idle-fanouts declares that
// many more exchange/queue pairs for the whole run (does the number of bindings matter?).
//
// Usage: bench_e2e_broker_shapes --amqp-url URL --broker-pid PID --shape 1:default:none
//        --shape 24:fanout:hourglass ...
// Prints a table row per shape, then one JSON line per shape (for bench/results/*.jsonl).
#include <CLI/CLI.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <unistd.h>

#include "hourglass/time.hpp"
#include "support/amqp_client.hpp"

using namespace hourglass;
using hourglass::testing::Client;

namespace {

// How a publish reaches its queue.
enum class Route {
    default_exchange,  // routing key = the queue's name
    own_fanout,        // each queue behind a fanout exchange of its own (hourglass's delay queues)
    one_direct,        // one direct exchange, each queue bound by its own name
    one_headers,       // one headers exchange, each queue bound on a header naming it
};

struct Shape {
    std::size_t queues = 1;
    Route route = Route::default_exchange;
    bool hourglass_headers = false;
};

const std::map<std::string, Route> kRoutes{{"default", Route::default_exchange},
                                           {"fanout", Route::own_fanout},
                                           {"direct", Route::one_direct},
                                           {"headers", Route::one_headers}};

// Seconds of CPU a process has used (user + system), or a negative number if unknown.
double cpu_seconds_of(long pid) {
    if (pid <= 0) return -1;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return -1;
    // Fields after the command (which may hold spaces) start after its closing parenthesis.
    std::istringstream fields(line.substr(line.rfind(')') + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
        if (i == 14) utime = std::stoull(field);
        if (i == 15) stime = std::stoull(field);
    }
    return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::string route_name(Route route) {
    for (const auto& [name, value] : kRoutes) {
        if (value == route) return name;
    }
    return "?";
}

std::string describe(const Shape& shape) {
    return std::to_string(shape.queues) + (shape.queues == 1 ? " queue" : " queues") +
           ", " + route_name(shape.route) +
           (shape.hourglass_headers ? ", hourglass headers" : ", no headers");
}

// QUEUES:ROUTE:HEADERS, or nothing if it says anything else.
std::optional<Shape> parse_shape(const std::string& text) {
    std::istringstream in(text);
    std::string queues, route, headers;
    std::getline(in, queues, ':');
    std::getline(in, route, ':');
    std::getline(in, headers, ':');
    const bool queues_valid = !queues.empty() && queues.size() <= 4 &&
                              queues.find_first_not_of("0123456789") == std::string::npos;
    if (!queues_valid || !kRoutes.contains(route) || (headers != "none" && headers != "hourglass")) {
        return std::nullopt;
    }
    return Shape{.queues = std::max<std::size_t>(1, std::stoul(queues)),
                 .route = kRoutes.at(route),
                 .hourglass_headers = headers == "hourglass"};
}

struct Settings {
    std::string amqp_url;
    std::size_t messages = 100000;
    std::size_t window = 2000;
    std::size_t body_bytes = 16;
    std::int64_t ttl_ms = 600000;
    long broker_pid = 0;
    std::size_t idle_fanouts = 0;
    bool blocks = false;
    std::vector<std::string> shapes{"1:default:none", "24:fanout:hourglass"};
};

// The exchanges every shape shares, named after one run, declared once and deleted at the end.
struct Exchanges {
    std::string tag;
    std::string sink, direct, headers;
    std::vector<std::string> idle;  // --idle-fanouts: an exchange and a queue of one name each
};

// Declares shape number `index`'s TTL queues and their routes; returns their names.
std::vector<std::string> declare_targets(amqp::Channel& channel, const Shape& shape, std::size_t index,
                                         const Exchanges& exchanges, std::int64_t ttl_ms) {
    std::vector<std::string> targets;
    for (std::size_t q = 0; q < shape.queues; ++q) {
        const auto name = "hourglass.bench.shapes." + exchanges.tag + "." + std::to_string(index) + "." +
                          std::to_string(q);
        channel.declare_queue(name, {{"x-queue-type", std::string("classic")},
                                     {"x-message-ttl", ttl_ms},
                                     {"x-dead-letter-exchange", exchanges.sink}});
        switch (shape.route) {
        case Route::default_exchange: break;
        case Route::own_fanout:
            channel.declare_exchange(name, "fanout");
            channel.bind_queue(name, name, "");
            break;
        case Route::one_direct: channel.bind_queue(name, exchanges.direct, name); break;
        case Route::one_headers:
            channel.bind_queue(name, exchanges.headers, "", {{"x-match", std::string("all")}, {"x-lane", name}});
            break;
        }
        targets.push_back(name);
    }
    return targets;
}

// Message number `n` of a shape, to its target queue.
Message shaped_message(const Settings& s, const Shape& shape, const Exchanges& exchanges,
                       const std::vector<std::string>& targets, std::size_t n, const std::string& due) {
    Message m;
    m.body = std::string(s.body_bytes, 'x');
    m.properties.delivery_mode = 2;
    m.properties.message_id = "shape-" + std::to_string(n);
    const auto in_window = n % s.window;
    const auto& target = s.blocks ? targets[in_window * targets.size() / s.window] : targets[n % targets.size()];
    switch (shape.route) {
    case Route::default_exchange: m.routing_key = target; break;
    case Route::own_fanout: m.exchange = target; m.routing_key = "bench.job"; break;
    case Route::one_direct: m.exchange = exchanges.direct; m.routing_key = target; break;
    case Route::one_headers:
        m.exchange = exchanges.headers;
        m.routing_key = "bench.job";
        set_header(m.properties, "x-lane", target);
        break;
    }
    if (shape.hourglass_headers) {
        set_header(m.properties, "x-hourglass-id", *m.properties.message_id);
        set_header(m.properties, "x-hourglass-due", due);
        set_header(m.properties, "x-hourglass-run", std::int64_t{1});
    }
    return m;
}

// Publishes --messages of one shape with confirms and measures it; prints its table row.
nlohmann::json measure_shape(const Settings& s, Client& client, const Shape& shape, std::size_t index,
                             const Exchanges& exchanges) {
    auto& channel = client.channel();
    const auto targets = declare_targets(channel, shape, index, exchanges, s.ttl_ms);
    const auto due = format_rfc3339_ms(now_ms());
    std::vector<Message> batch;
    batch.reserve(s.window);
    const auto cpu_before = cpu_seconds_of(s.broker_pid);
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t n = 0; n < s.messages;) {
        batch.clear();
        for (; n < s.messages && batch.size() < s.window; ++n) {
            batch.push_back(shaped_message(s, shape, exchanges, targets, n, due));
        }
        client.publish_all(batch);
    }
    const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto cpu_after = cpu_seconds_of(s.broker_pid);
    const double rate = static_cast<double>(s.messages) / seconds;
    const double cpu_us =
        cpu_before >= 0 ? (cpu_after - cpu_before) * 1e6 / static_cast<double>(s.messages) : -1;
    std::cout << "| " << describe(shape) << " | " << static_cast<long>(rate) << " | "
              << (cpu_us >= 0 ? std::to_string(static_cast<long>(cpu_us)) : "-") << " |\n";
    for (const auto& target : targets) {
        channel.delete_queue(target);
        if (shape.route == Route::own_fanout) channel.delete_exchange(target);
    }
    return {{"scenario", "broker-shapes"},      {"shape", describe(shape)},
            {"queues", shape.queues},           {"route", route_name(shape.route)},
            {"hourglass_headers", shape.hourglass_headers},
            {"messages", s.messages},           {"window", s.window},
            {"body_bytes", s.body_bytes},       {"publishes_per_s", rate},
            {"broker_cpu_us_per_publish", cpu_us}};
}

Exchanges declare_exchanges(amqp::Channel& channel, std::size_t idle_fanouts) {
    Exchanges exchanges;
    exchanges.tag = std::to_string(std::random_device{}() % 1000000);
    exchanges.sink = "hourglass.bench.shapes.sink." + exchanges.tag;
    exchanges.direct = "hourglass.bench.shapes.direct." + exchanges.tag;
    exchanges.headers = "hourglass.bench.shapes.headers." + exchanges.tag;
    channel.declare_exchange(exchanges.sink, "fanout");
    channel.declare_exchange(exchanges.direct, "direct");
    channel.declare_exchange(exchanges.headers, "headers");
    for (std::size_t i = 0; i < idle_fanouts; ++i) {
        exchanges.idle.push_back("hourglass.bench.shapes.idle." + exchanges.tag + "." + std::to_string(i));
        channel.declare_queue(exchanges.idle.back(), {{"x-queue-type", std::string("classic")}});
        channel.declare_exchange(exchanges.idle.back(), "fanout");
        channel.bind_queue(exchanges.idle.back(), exchanges.idle.back(), "");
    }
    return exchanges;
}

void delete_exchanges(amqp::Channel& channel, const Exchanges& exchanges) {
    for (const auto& name : exchanges.idle) {
        channel.delete_queue(name);
        channel.delete_exchange(name);
    }
    for (const auto& exchange : {exchanges.sink, exchanges.direct, exchanges.headers}) {
        channel.delete_exchange(exchange);
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"The broker's cost per confirmed persistent publish, by shape"};
    Settings s;
    app.add_option("--amqp-url", s.amqp_url, "broker URL")->required();
    app.add_option("--messages", s.messages, "messages per shape");
    app.add_option("--window", s.window, "publishes between waits for their confirms");
    app.add_option("--body-bytes", s.body_bytes, "bytes of each message's body");
    app.add_option("--ttl", s.ttl_ms, "the queues' x-message-ttl, ms (outlasts the run)");
    app.add_flag("--blocks", s.blocks, "publish each window in one block per queue instead of round-robin");
    app.add_option("--idle-fanouts", s.idle_fanouts,
                   "fanout exchanges, each bound to an idle queue, declared for the whole run");
    app.add_option("--broker-pid", s.broker_pid, "the broker's process id, for its CPU time");
    app.add_option("--shape", s.shapes,
                   "QUEUES:default|fanout|direct|headers:none|hourglass, repeatable; run in the order given");
    CLI11_PARSE(app, argc, argv);

    std::vector<Shape> shapes;
    for (const auto& text : s.shapes) {
        const auto shape = parse_shape(text);
        if (!shape) {
            std::cerr << "--shape " << text << ": expected QUEUES:default|fanout|direct|headers:none|hourglass\n";
            return 2;
        }
        shapes.push_back(*shape);
    }
    Client client(s.amqp_url);
    const auto exchanges = declare_exchanges(client.channel(), s.idle_fanouts);
    std::cout << "| shape | publishes/s | broker CPU per publish, us |\n|---|---|---|\n";
    std::vector<nlohmann::json> results;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
        results.push_back(measure_shape(s, client, shapes[i], i, exchanges));
    }
    delete_exchanges(client.channel(), exchanges);
    for (const auto& result : results) std::cout << result.dump() << "\n";
    return 0;
}
