// End-to-end lateness driver: publishes jobs at a steady rate with due times spread over a
// window, receives them as a user would (a queue bound to the output exchange) and reports
// lateness = receive time - x-hourglass-due, plus early, lost and duplicated releases.
//
// --mode hourglass   jobs go through hourglass (publish to <prefix>.in with x-delay)
// --mode baseline    the broker's own limit: the driver itself publishes each message at
//                    due - ttl into one TTL/dead-letter queue (no hourglass, no database)
//
// Prints a table row and one JSON line (for bench/results/*.jsonl).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <queue>
#include <random>
#include <thread>

#include "support/amqp_client.hpp"

using namespace hourglass;
using namespace std::chrono_literals;
using hourglass::testing::Client;

namespace {

struct Settings {
    std::string mode = "hourglass";
    std::string amqp_url;
    std::string prefix = "hourglass";
    std::string scenario = "steady";
    double rate = 1000;
    double duration_s = 60;
    std::int64_t min_delay_ms = 5000;
    std::int64_t max_delay_ms = 90000;
    std::int64_t baseline_ttl_ms = 1000;
    double drain_s = 30;
    unsigned seed = 42;
};

struct Job {
    std::string id;
    TimePoint due;
};

double percentile(std::vector<double> values, double p) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const auto index = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
    return values[std::min(index, values.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
    Settings s;
    CLI::App app{"hourglass end-to-end lateness benchmark"};
    app.add_option("--mode", s.mode)->check(CLI::IsMember({"hourglass", "baseline"}));
    app.add_option("--amqp-url", s.amqp_url)->envname("HOURGLASS_AMQP_URL")->required();
    app.add_option("--prefix", s.prefix);
    app.add_option("--scenario", s.scenario, "label in the output");
    app.add_option("--rate", s.rate, "jobs per second");
    app.add_option("--duration", s.duration_s, "seconds of publishing");
    app.add_option("--min-delay", s.min_delay_ms);
    app.add_option("--max-delay", s.max_delay_ms);
    app.add_option("--baseline-ttl", s.baseline_ttl_ms);
    app.add_option("--drain", s.drain_s, "seconds to wait after the last due time");
    CLI11_PARSE(app, argc, argv);

    const auto total = static_cast<std::size_t>(s.rate * s.duration_s);
    const auto run_tag = std::to_string(std::random_device{}() % 1000000);
    std::string out_exchange = s.prefix + ".out";
    std::string baseline_queue;

    Client receiver(s.amqp_url);
    if (s.mode == "baseline") {
        out_exchange = "bench.baseline.out." + run_tag;
        baseline_queue = "bench.baseline.ttl." + run_tag;
        auto& c = receiver.connection();
        c.declare_exchange(2, out_exchange, "fanout");
        c.declare_queue(2, baseline_queue,
                        {{"x-queue-type", std::string("classic")},
                         {"x-message-ttl", s.baseline_ttl_ms},
                         {"x-dead-letter-exchange", out_exchange}});
    }
    receiver.subscribe(out_exchange, "#");

    std::mt19937_64 random(s.seed);
    std::uniform_int_distribution<std::int64_t> delay(s.min_delay_ms, s.max_delay_ms);

    std::map<std::string, TimePoint> expected;
    std::mutex expected_mutex;
    std::atomic<bool> publishing_done{false};
    TimePoint last_due{};

    std::thread publisher([&] {
        Client client(s.amqp_url);
        const auto start = std::chrono::steady_clock::now();
        // baseline: the driver holds each message until due - ttl, like hourglass's loader.
        using Entry = std::pair<TimePoint, Message>;
        auto later = [](const Entry& a, const Entry& b) { return a.first > b.first; };
        std::priority_queue<Entry, std::vector<Entry>, decltype(later)> held(later);
        std::size_t sent = 0;
        std::vector<Message> batch;
        while (sent < total || !held.empty()) {
            const auto now_steady = std::chrono::steady_clock::now();
            const auto should_have_sent = std::min<std::size_t>(
                total, static_cast<std::size_t>(
                           std::chrono::duration<double>(now_steady - start).count() * s.rate) + 1);
            batch.clear();
            while (sent < should_have_sent) {
                const auto id = "bench-" + run_tag + "-" + std::to_string(sent);
                const auto wait = delay(random);
                const auto due = now_ms() + Milliseconds{wait};
                {
                    std::lock_guard lock(expected_mutex);
                    expected[id] = due;
                    last_due = std::max(last_due, due);
                }
                Message m;
                m.body = "payload " + id;
                m.routing_key = "bench.job";
                m.properties.message_id = id;
                if (s.mode == "hourglass") {
                    m.exchange = s.prefix + ".in";
                    set_header(m.properties, "x-delay", wait);
                    batch.push_back(std::move(m));
                } else {
                    m.exchange = "";
                    m.routing_key = baseline_queue;
                    set_header(m.properties, "x-hourglass-id", id);
                    set_header(m.properties, "x-hourglass-due", format_rfc3339_ms(due));
                    held.emplace(due - Milliseconds{s.baseline_ttl_ms}, std::move(m));
                }
                ++sent;
            }
            while (!held.empty() && held.top().first <= now_ms()) {
                batch.push_back(held.top().second);
                held.pop();
            }
            if (!batch.empty()) client.publish_all(batch);
            std::this_thread::sleep_for(1ms);
        }
        publishing_done = true;
    });

    std::vector<double> lateness;
    std::size_t early = 0;
    std::size_t duplicates = 0;
    std::map<std::string, int> seen;
    while (true) {
        auto received = receiver.receive(1s);
        if (received) {
            const auto id = testing::string_header(received->message, "x-hourglass-id");
            const auto due = parse_rfc3339(testing::string_header(received->message, "x-hourglass-due"));
            if (!due || id.rfind("bench-" + run_tag, 0) != 0) continue;
            if (seen[id]++ > 0) {
                ++duplicates;
                continue;
            }
            const auto late_ms =
                std::chrono::duration<double, std::milli>(received->received_at_us - *due).count();
            if (late_ms < 0) ++early;
            lateness.push_back(late_ms);
        }
        if (publishing_done && seen.size() >= total) break;
        TimePoint deadline;
        {
            std::lock_guard lock(expected_mutex);
            deadline = last_due + std::chrono::duration_cast<Milliseconds>(
                                      std::chrono::duration<double>(s.drain_s));
        }
        if (publishing_done && now_ms() > deadline) break;
    }
    publisher.join();
    if (s.mode == "baseline") {
        receiver.connection().delete_queue(2, baseline_queue);
        receiver.connection().delete_exchange(2, out_exchange);
    }

    const auto lost = total - seen.size();
    nlohmann::json result = {{"scenario", s.scenario},
                             {"mode", s.mode},
                             {"jobs", total},
                             {"rate", s.rate},
                             {"received", seen.size()},
                             {"lost", lost},
                             {"early", early},
                             {"duplicates", duplicates},
                             {"lateness_p50_ms", percentile(lateness, 0.50)},
                             {"lateness_p99_ms", percentile(lateness, 0.99)},
                             {"lateness_max_ms", percentile(lateness, 1.0)},
                             {"lateness_min_ms", percentile(lateness, 0.0)}};
    std::printf("%-10s %-10s jobs %7zu  lost %zu  early %zu  dup %zu  lateness p50 %.2f ms  p99 %.2f ms  max %.2f ms  min %.2f ms\n",
                s.scenario.c_str(), s.mode.c_str(), total, lost, early, duplicates,
                percentile(lateness, 0.5), percentile(lateness, 0.99), percentile(lateness, 1.0),
                percentile(lateness, 0.0));
    std::cout << result.dump() << std::endl;
    return lost == 0 && early == 0 ? 0 : 1;
}
