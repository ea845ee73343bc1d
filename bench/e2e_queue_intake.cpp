// How fast one consumer's queue takes in a burst, by how the burst reaches it. No hourglass, no
// database: the driver alone, so that the broker's own bound on a hotspot's drain can be told
// apart from hourglass's.
//
// A consumer (its own connection and thread, manual acks, --prefetch) reads an exclusive queue
// bound to a topic exchange, like an application bound to hourglass.out. With --queues Q the
// burst is split over Q such queues by routing key (message k to queue k mod Q), each read by a
// consumer of its own; --receiving-queue-type quorum makes them durable quorum queues
// (deleted after the run) instead. --messages persistent messages then reach the queues by one
// of these arrivals (--arrival, repeatable, run in order):
//   published              the driver publishes them (confirms every --window) while the
//                          consumer reads: the broker's channel paces the publisher.
//   dead-lettered          the driver first puts them into --lanes TTL queues, each behind a
//                          fanout exchange of its own (as hourglass's delay queues are), every
//                          message expiring at one instant; the queues dead-letter them into the
//                          exchange at that instant, as they do a hotspot. Nothing paces that.
//                          --pace R: message k expires k / R seconds after that instant
//                          instead (a release paced at R a second); --queue-ttl T: the lanes'
//                          x-message-ttl expires each message T ms after its publish (paced by
//                          the publisher, as hourglass's delay queues are).
//   published-preloaded    published into the queue before the consumer starts: delivery alone.
//   dead-lettered-preloaded  dead-lettered into the queue before the consumer starts.
// The drain is from the first publish (published), from the due instant (dead-lettered) or from
// the consumers' start (preloaded) to the last message handled by any consumer.
//
// Usage: bench_e2e_queue_intake --amqp-url URL --arrival published --arrival dead-lettered
//        bench_e2e_queue_intake --amqp-url URL --arrival dead-lettered --pace 20000
//        bench_e2e_queue_intake --amqp-url URL --arrival dead-lettered --queues 4
// Prints a table row per arrival, then one JSON line per arrival (for bench/results/*.jsonl).
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "hourglass/time.hpp"
#include "support/amqp_client.hpp"

using namespace hourglass;
using hourglass::testing::Client;
using SteadyClock = std::chrono::steady_clock;

namespace {

const std::vector<std::string> kArrivals{"published", "dead-lettered", "published-preloaded",
                                         "dead-lettered-preloaded"};

struct Settings {
    std::string amqp_url;
    std::size_t messages = 100000;
    std::size_t window = 100;
    std::size_t lanes = 4;
    std::uint16_t prefetch = 200;
    std::size_t queues = 1;         // consumer queues the burst is split over by routing key
    std::int64_t lead_ms = 3000;    // from the end of publishing to the due instant
    std::int64_t queue_ttl_ms = 0;  // > 0: the lanes' x-message-ttl instead of per-message expiry
    std::size_t pace = 0;           // > 0: message k expires at due + k / pace seconds
    std::size_t pace_chunk = 1;     // with a pace: messages released together, each chunk later
    bool release_headers = false;   // hourglass's three release headers on every message
    bool release_route = false;     // dead-letter through hourglass's release route
    std::string receiving_queue_type = "classic";  // of the consumers' queues: classic|quorum
    std::string label;              // copied into the JSON lines (the broker's version, say)
    double linger_s = 0;            // seconds to wait before exiting
};

// What every consumer of a run has handled, together: the run is over when all of the burst
// was handled, whichever consumer got each message.
class Tally {
  public:
    explicit Tally(std::size_t expected) : expected_(expected) {}

    void count(SteadyClock::time_point now) {
        const auto at = now.time_since_epoch().count();
        auto first = first_.load();
        while (at < first && !first_.compare_exchange_weak(first, at)) {
        }
        auto last = last_.load();
        while (at > last && !last_.compare_exchange_weak(last, at)) {
        }
        ++handled_;
    }

    bool complete() const { return handled_ >= expected_; }
    std::size_t handled() const { return handled_; }
    SteadyClock::time_point first() const { return at(first_); }
    SteadyClock::time_point last() const { return at(last_); }

  private:
    static SteadyClock::time_point at(const std::atomic<SteadyClock::rep>& ticks) {
        return SteadyClock::time_point{SteadyClock::duration{ticks.load()}};
    }

    const std::size_t expected_;
    std::atomic<std::size_t> handled_{0};
    std::atomic<SteadyClock::rep> first_{std::numeric_limits<SteadyClock::rep>::max()};
    std::atomic<SteadyClock::rep> last_{0};
};

// Reads a queue with manual acks on a connection of its own, until the tally is complete.
class Consumer {
  public:
    Consumer(const std::string& url, std::uint16_t prefetch, Tally& tally)
        : connection_(options(url)), channel_(connection_, 1), tally_(tally) {
        channel_.set_prefetch(prefetch);
    }

    // A failed run (the broker gone, say) still stops and joins the reader before exiting.
    ~Consumer() { stop(); }
    Consumer(const Consumer&) = delete;
    Consumer& operator=(const Consumer&) = delete;

    amqp::Channel& channel() { return channel_; }

    void start(const std::string& queue) {
        channel_.consume(queue, /*no_ack=*/false);
        thread_ = std::thread([this] { run(); });
    }

    void stop() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
    }

  private:
    static amqp::ConnectionOptions options(const std::string& url) {
        amqp::ConnectionOptions options;
        options.url = url;
        options.connection_name = "hourglass bench consumer";
        return options;
    }

    void run() {
        while (!stop_ && !tally_.complete()) {
            auto event = connection_.next_event(std::chrono::milliseconds{100});
            if (!event) continue;
            auto* delivery = std::get_if<amqp::Delivery>(&*event);
            if (delivery == nullptr) continue;
            const auto now = SteadyClock::now();
            channel_.ack(delivery->delivery_tag);
            tally_.count(now);
        }
    }

    amqp::Connection connection_;
    amqp::Channel channel_;
    Tally& tally_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
};

// The consumers of a run: --queues exclusive queues, each bound to the run's exchange on a key
// of its own and read by a consumer of its own.
class Consumers {
  public:
    Consumers(const Settings& s, const std::string& exchange) : tally_(s.messages) {
        for (std::size_t q = 0; q < s.queues; ++q) {
            consumers_.push_back(std::make_unique<Consumer>(s.amqp_url, s.prefetch, tally_));
            auto& channel = consumers_.back()->channel();
            if (s.receiving_queue_type == "quorum") {
                // Quorum queues cannot be exclusive: a durable one named after the run's
                // exchange, deleted when the run ends.
                queues_.push_back(channel.declare_queue(
                    exchange + ".q" + std::to_string(q),
                    {{"x-queue-type", std::string("quorum")}}));
                durable_ = true;
            } else {
                queues_.push_back(channel.declare_queue("", {}, /*exclusive=*/true));
            }
            channel.bind_queue(queues_.back(), exchange, routing_prefix(q) + "#");
        }
    }

    ~Consumers() {
        if (!durable_) return;
        for (std::size_t q = 0; q < queues_.size(); ++q) {
            try {
                consumers_[q]->stop();
                consumers_[q]->channel().delete_queue(queues_[q]);
            } catch (const std::exception& e) {
                std::cerr << "could not delete " << queues_[q] << ": " << e.what() << "\n";
            }
        }
    }
    Consumers(const Consumers&) = delete;
    Consumers& operator=(const Consumers&) = delete;

    // The routing key of the messages for queue `q`, up to its last word.
    static std::string routing_prefix(std::size_t q) {
        return "bench.intake.q" + std::to_string(q) + ".";
    }

    void start() {
        started_ = SteadyClock::now();
        for (std::size_t q = 0; q < consumers_.size(); ++q) consumers_[q]->start(queues_[q]);
    }

    // Messages ready in the queues.
    std::size_t queued() {
        std::size_t n = 0;
        for (std::size_t q = 0; q < queues_.size(); ++q) {
            n += consumers_[q]->channel().queue_message_count(queues_[q]).value_or(0);
        }
        return n;
    }

    // Waits for the last message (or `limit`); true if all came.
    bool wait(std::chrono::seconds limit) {
        const auto deadline = SteadyClock::now() + limit;
        while (!tally_.complete() && SteadyClock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds{10});
        }
        for (auto& consumer : consumers_) consumer->stop();
        return tally_.complete();
    }

    const Tally& tally() const { return tally_; }
    SteadyClock::time_point started() const { return started_; }

  private:
    Tally tally_;  // before the consumers, which count into it until they stop
    std::vector<std::unique_ptr<Consumer>> consumers_;
    std::vector<std::string> queues_;
    bool durable_ = false;  // the queues outlive their connections: delete them
    SteadyClock::time_point started_;
};

Message job(std::size_t n, const Settings& s) {
    Message m;
    m.body = R"({"i":)" + std::to_string(n) + "}";
    m.routing_key = Consumers::routing_prefix(n % s.queues) + "job";
    m.properties.delivery_mode = 2;
    m.properties.message_id = "intake-" + std::to_string(n);
    if (s.release_headers) {
        // As long as hourglass's: a UUID, a due time with milliseconds, a run number.
        char id[40];
        std::snprintf(id, sizeof id, "00000000-0000-4000-8000-%012zu", n);
        set_header(m.properties, "x-hourglass-id", std::string(id));
        set_header(m.properties, "x-hourglass-due", std::string("2026-11-27T12:00:00.000Z"));
        set_header(m.properties, "x-hourglass-run", std::int64_t{1});
    }
    return m;
}

// Publishes --messages messages, each as `shape(job, n)` makes it, waiting for the confirms
// every --window publishes.
template <typename Shape>
void publish(Client& client, const Settings& s, Shape shape) {
    std::vector<Message> batch;
    batch.reserve(s.window);
    for (std::size_t n = 0; n < s.messages;) {
        batch.clear();
        for (; n < s.messages && batch.size() < s.window; ++n) {
            batch.push_back(shape(job(n, s), n));
        }
        client.publish_all(batch);
    }
}

double seconds(SteadyClock::duration d) {
    return std::chrono::duration<double>(d).count();
}

// The exchanges and TTL lanes of one arrival, declared on `setup` and deleted with delete_all().
struct ArrivalRoute {
    std::string exchange;  // the consumers' exchange
    std::string released;  // hourglass's release route (--release-route), or empty
    std::string copy;
    std::vector<std::string> lanes;  // dead-lettered arrivals: the TTL queues, each behind a fanout

    void delete_all(amqp::Channel& setup) const {
        for (const auto& lane : lanes) {
            setup.delete_queue(lane);
            setup.delete_exchange(lane);
        }
        if (!released.empty()) {
            setup.delete_exchange(released);
            setup.delete_exchange(copy);
        }
        setup.delete_exchange(exchange);
    }
};

ArrivalRoute declare_route(amqp::Channel& setup, const Settings& s, const std::string& exchange,
                           bool dead_lettered) {
    ArrivalRoute route{.exchange = exchange, .released = {}, .copy = {}, .lanes = {}};
    // hourglass's release route: the lanes dead-letter into a fanout exchange bound to the
    // consumer's exchange and to a direct exchange (hourglass's copy to its audit, here bound
    // to nothing the messages' key matches).
    if (dead_lettered && s.release_route) {
        route.released = exchange + ".released";
        route.copy = exchange + ".copy";
        setup.declare_exchange(route.released, "fanout");
        setup.declare_exchange(route.copy, "direct");
        setup.bind_exchange(exchange, route.released, "");
        setup.bind_exchange(route.copy, route.released, "");
    }
    if (!dead_lettered) return route;
    for (std::size_t lane = 0; lane < s.lanes; ++lane) {
        route.lanes.push_back(exchange + ".lane-" + std::to_string(lane));
        setup.declare_exchange(route.lanes.back(), "fanout");
        amqp::Arguments arguments{{"x-queue-type", std::string("classic")},
                                  {"x-dead-letter-exchange", s.release_route ? route.released : exchange}};
        if (s.queue_ttl_ms > 0) arguments.emplace_back("x-message-ttl", s.queue_ttl_ms);
        setup.declare_queue(route.lanes.back(), arguments);
        setup.bind_queue(route.lanes.back(), route.lanes.back(), "");
    }
    return route;
}

// Publishes the burst through its TTL lanes so that every message expires at one instant (or
// paced from it); returns that instant. With --queue-ttl the lanes' TTL expires each message
// that long after its publish instead, like hourglass's delay queues, and the instant is when
// the first one expires. Starts the consumers just before, unless `preloaded`.
SteadyClock::time_point publish_dead_lettered(Client& publisher, const Settings& s, const ArrivalRoute& route,
                                              Consumers& consumers, bool preloaded, const std::string& arrival) {
    const auto publish_estimate = std::chrono::milliseconds{
        static_cast<std::int64_t>(s.messages / 10)};  // at 10,000/s, generously
    const auto due = SteadyClock::now() + (s.queue_ttl_ms > 0 ? std::chrono::milliseconds{s.queue_ttl_ms}
                                                              : publish_estimate + std::chrono::milliseconds{s.lead_ms});
    if (!preloaded) consumers.start();
    publish(publisher, s, [&](Message m, std::size_t n) {
        m.exchange = route.lanes[n % route.lanes.size()];
        const auto chunk_start = n / s.pace_chunk * s.pace_chunk;
        const auto offset = std::chrono::milliseconds{
            s.pace > 0 ? static_cast<std::int64_t>(chunk_start * 1000 / s.pace) : 0};
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(due + offset - SteadyClock::now());
        if (s.queue_ttl_ms <= 0) {
            m.properties.expiration = std::to_string(std::max<std::int64_t>(0, left.count()));
        }
        return m;
    });
    if (SteadyClock::now() >= due) {
        std::cerr << arrival << ": publishing outlasted the lead; raise --lead\n";
    }
    return due;
}

nlohmann::json run_arrival(const Settings& s, const std::string& arrival, const std::string& tag) {
    Client publisher(s.amqp_url);
    auto& setup = publisher.channel();
    const std::string exchange = "hourglass.bench.intake." + tag;
    setup.declare_exchange(exchange, "topic");
    Consumers consumers(s, exchange);
    const bool dead_lettered = arrival.starts_with("dead-lettered");
    const bool preloaded = arrival.ends_with("preloaded");
    const auto route = declare_route(setup, s, exchange, dead_lettered);

    SteadyClock::time_point from;
    if (dead_lettered) {
        from = publish_dead_lettered(publisher, s, route, consumers, preloaded, arrival);
    } else {
        if (!preloaded) consumers.start();
        from = SteadyClock::now();
        publish(publisher, s, [&](Message m, std::size_t) {
            m.exchange = exchange;
            return m;
        });
    }
    double intake = 0;  // preloaded: from the first publish or the due instant to all queued
    if (preloaded) {
        // Wait until the whole burst is in the consumers' queues, then start reading.
        while (consumers.queued() < s.messages) {
            std::this_thread::sleep_for(std::chrono::milliseconds{20});
        }
        intake = seconds(SteadyClock::now() - from);
        consumers.start();
        from = consumers.started();
    }
    const bool complete = consumers.wait(std::chrono::seconds{120 + s.messages / 1000});
    const auto& tally = consumers.tally();
    const double drain = seconds(tally.last() - from);
    const double after_first = tally.handled() > 1 ? static_cast<double>(tally.handled() - 1) /
                                                         seconds(tally.last() - tally.first())
                                                   : 0;
    route.delete_all(setup);
    return {{"scenario", "queue-intake"},
            {"arrival", arrival},
            {"messages", s.messages},
            {"handled", tally.handled()},
            {"queues", s.queues},
            {"complete", complete},
            {"lanes", dead_lettered ? s.lanes : 0},
            {"queue_ttl_ms", dead_lettered ? s.queue_ttl_ms : 0},
            {"pace_per_s", dead_lettered && s.queue_ttl_ms <= 0 ? s.pace : 0},
            {"pace_chunk", s.pace_chunk},
            {"release_headers", s.release_headers},
            {"release_route", dead_lettered && s.release_route},
            {"label", s.label},
            {"prefetch", s.prefetch},
            {"receiving_queue_type", s.receiving_queue_type},
            {"drain_s", drain},
            {"intake_s", intake},
            {"jobs_per_s_after_first", after_first}};
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"How fast one consumer's queue takes in a burst, by how it arrives"};
    Settings s;
    std::vector<std::string> arrivals{"published", "dead-lettered"};
    app.add_option("--amqp-url", s.amqp_url, "broker URL")->required();
    app.add_option("--messages", s.messages, "messages per arrival");
    app.add_option("--window", s.window, "publishes between waits for their confirms");
    app.add_option("--lanes", s.lanes, "TTL queues a dead-lettered burst is spread over")
        ->check(CLI::Range(1, 64));
    app.add_option("--prefetch", s.prefetch, "each consumer's prefetch");
    app.add_option("--queues", s.queues,
                   "consumer queues the burst is split over by routing key, a consumer each")
        ->check(CLI::Range(1, 64));
    app.add_option("--lead", s.lead_ms,
                   "ms from the estimated end of publishing to the due instant");
    app.add_option("--queue-ttl", s.queue_ttl_ms,
                   "dead-lettered: the lanes' x-message-ttl, ms, instead of per-message expiry");
    app.add_option("--pace", s.pace,
                   "dead-lettered: message k expires k / PACE s after the due instant (0: all "
                   "at once)");
    app.add_option("--pace-chunk", s.pace_chunk,
                   "with --pace: messages expiring together, each chunk CHUNK / PACE s later")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1000000}));
    app.add_flag("--release-headers", s.release_headers,
                 "every message carries hourglass's three release headers");
    app.add_flag("--release-route", s.release_route,
                 "dead-lettered: through hourglass's release route (a fanout exchange bound to "
                 "the consumer's exchange and to a direct one)");
    app.add_option("--receiving-queue-type", s.receiving_queue_type,
                   "type of the consumers' queues (quorum: durable, deleted after the run)")
        ->check(CLI::IsMember({"classic", "quorum"}));
    app.add_option("--label", s.label, "a label for the JSON lines, such as the broker's version");
    app.add_option(
        "--linger", s.linger_s,
        "seconds to wait before exiting, so that the broker's statistics include the run");
    app.add_option("--arrival", arrivals, "published|dead-lettered[-preloaded], repeatable")
        ->check(CLI::IsMember(kArrivals));
    CLI11_PARSE(app, argc, argv);

    const auto tag = std::to_string(std::random_device{}() % 1000000);
    std::cout << "| arrival | drain, s | jobs/s after the first | preloaded: intake, s |\n"
              << "|---|---|---|---|\n";
    std::vector<nlohmann::json> results;
    for (std::size_t i = 0; i < arrivals.size(); ++i) {
        auto result = run_arrival(s, arrivals[i], tag + "." + std::to_string(i));
        std::cout << "| " << arrivals[i] << " | " << result["drain_s"].get<double>() << " | "
                  << static_cast<long>(result["jobs_per_s_after_first"].get<double>())
                  << (result["complete"].get<bool>() ? "" : " (incomplete)") << " | "
                  << (arrivals[i].ends_with("preloaded")
                          ? std::to_string(result["intake_s"].get<double>())
                          : std::string("-"))
                  << " |\n"
                  << std::flush;
        results.push_back(std::move(result));
    }
    for (const auto& result : results) std::cout << result.dump() << "\n";
    std::this_thread::sleep_for(std::chrono::duration<double>(s.linger_s));
    return 0;
}
