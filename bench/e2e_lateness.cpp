// End-to-end lateness driver: publishes jobs as a user would, receives them as a user would (an
// exclusive queue bound to the output exchange; --receiving-queue-type quorum: a durable quorum
// queue, deleted at the end) and reports lateness = receive time - x-hourglass-due, plus early,
// lost and duplicated releases.
//
// --pattern steady   --rate jobs/s for --duration s, each due --min-delay..--max-delay ms after
//                    its publish (x-delay)
// --pattern hotspot  --jobs jobs published as fast as the broker takes them (or at most
//                    --publish-rate a second), all due at one instant --lead ms after the start
//                    (x-schedule-at, epoch ms); reports the drain rate and how many were
//                    released within --within s of the instant
//
// --mode hourglass   jobs go through hourglass (publish to <prefix>.in)
// --mode baseline    the broker's own limit: the driver itself holds each message until
//                    due - ttl and publishes it into one TTL/dead-letter queue (no hourglass,
//                    no database); its dead-letter exchange is what the receiver listens to
//
// --target-exchange  (hourglass) every job carries x-hourglass-exchange: NAME, a fanout exchange
//   NAME             the driver declares (and deletes at the end) and binds its receiving queues
//                    to instead of <prefix>.out: the path of a user of the delayed-message plugin
//                    (hourglass must run with an --allow-exchange that matches NAME)
// --cron             (hourglass, hotspot) every job is recurring instead: x-cron "S M H * * *",
//                    the instant rounded up to a whole second, and x-cron-limit 1 (so that no
//                    job is left pending): a popular cron minute
// --queues Q         (hourglass) the jobs are split over Q receiving queues by routing key (job
//                    k carries bench.q<k mod Q>.job), each read on a connection of its own, as
//                    an application spreads a burst over several queues
//
// Prints a table row, then one JSON line (the last line of the output, for
// bench/results/*.jsonl). Exit status 0 only if nothing was lost and nothing was early.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <queue>
#include <random>
#include <thread>
#include <unordered_map>

#include "support/amqp_client.hpp"

using namespace hourglass;
using namespace std::chrono_literals;
using hourglass::testing::Client;

namespace {

struct Settings {
    std::string mode = "hourglass";
    std::string pattern = "steady";
    std::string amqp_url;
    std::string prefix = "hourglass";
    std::string scenario = "steady";
    double rate = 1000;
    double publish_rate = 0;  // hotspot: jobs a second at most, 0 = unpaced
    double duration_s = 60;
    std::int64_t min_delay_ms = 5000;
    std::int64_t max_delay_ms = 90000;
    std::size_t jobs = 100000;
    std::int64_t lead_ms = 120000;
    double within_s = 10;
    std::int64_t baseline_ttl_ms = 1000;
    std::size_t chunk = 2000;
    std::size_t body_bytes = 0;
    double drain_s = 30;
    double linger_s = 0;
    double series_every_s = 0;  // > 0: lateness per interval of receive time, in the JSON
    unsigned seed = 42;
    std::size_t queues = 1;  // receiving queues, split by routing key (hourglass mode)
    std::string receiving_queue_type = "classic";  // classic (exclusive) or quorum (durable)
    std::string target_exchange;  // hourglass mode: released there through the forwarder
    bool cron = false;  // hourglass hotspot: recurring jobs (x-cron) due at the instant
};

// What the receivers got, in arrival order, when several receiving queues are each read by a
// thread of their own; the main thread takes the messages from here.
class Inbox {
  public:
    void push(testing::Received received) {
        {
            std::lock_guard lock(mutex_);
            messages_.push_back(std::move(received));
        }
        ready_.notify_one();
    }

    std::optional<testing::Received> pop(std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        if (!ready_.wait_for(lock, timeout, [&] { return !messages_.empty(); }))
            return std::nullopt;
        auto received = std::move(messages_.front());
        messages_.pop_front();
        return received;
    }

  private:
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<testing::Received> messages_;
};

// Receiving queues bound to the output exchange. One queue is read on the caller's thread, as
// this driver always read it; several are each read by a thread of its own filling an Inbox, so
// that one slow queue does not hold up the others. (A reader thread beside the main one costs a
// hand-over per message, which a 2-core machine shared with the broker should not pay for the
// single-queue figures.)
class Receivers {
  public:
    // `queue_type` quorum: durable quorum queues (which cannot be exclusive), deleted at the end.
    Receivers(const std::string& url, std::size_t count, std::string queue_type)
        : queue_type_(std::move(queue_type)) {
        for (std::size_t q = 0; q < count; ++q) clients_.push_back(std::make_unique<Client>(url));
    }
    ~Receivers() {
        stop();
        for (std::size_t q = 0; q < durable_queues_.size(); ++q) {
            try {
                clients_[q]->channel().delete_queue(durable_queues_[q]);
            } catch (const std::exception& e) {
                std::cerr << "could not delete " << durable_queues_[q] << ": " << e.what() << "\n";
            }
        }
    }
    Receivers(const Receivers&) = delete;
    Receivers& operator=(const Receivers&) = delete;

    // The routing key of job `n`; with several queues, job n goes to queue n mod count.
    std::string routing_key(std::size_t n) const {
        return clients_.size() == 1 ? "bench.job" : queue_word(n % clients_.size()) + ".job";
    }

    Client& first() { return *clients_.front(); }

    void subscribe(const std::string& exchange) {
        for (std::size_t q = 0; q < clients_.size(); ++q) {
            const auto key = clients_.size() == 1 ? "#" : queue_word(q) + ".#";
            if (queue_type_ == "quorum") {
                durable_queues_.push_back(exchange + ".receiving." + std::to_string(q));
                clients_[q]->subscribe(exchange, key, durable_queues_.back(),
                                       {{"x-queue-type", std::string("quorum")}});
            } else {
                clients_[q]->subscribe(exchange, key);
            }
        }
        if (clients_.size() == 1) return;
        for (auto& client : clients_) {
            threads_.emplace_back([this, &client] {
                while (!stop_) {
                    if (auto received = client->receive(100ms)) inbox_.push(std::move(*received));
                }
            });
        }
    }

    // The next message received from any queue, or nothing within `timeout`.
    std::optional<testing::Received> receive(std::chrono::milliseconds timeout) {
        if (clients_.size() == 1) return clients_.front()->receive(timeout);
        return inbox_.pop(timeout);
    }

    void stop() {
        stop_ = true;
        for (auto& thread : threads_) {
            if (thread.joinable()) thread.join();
        }
    }

  private:
    static std::string queue_word(std::size_t q) { return "bench.q" + std::to_string(q); }

    std::string queue_type_;
    std::vector<std::unique_ptr<Client>> clients_;
    std::vector<std::string> durable_queues_;  // deleted at the end
    Inbox inbox_;
    std::vector<std::thread> threads_;
    std::atomic<bool> stop_{false};
};

double percentile(const std::vector<double>& sorted, double p) {
    if (sorted.empty()) return 0;
    const auto index = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
    return sorted[std::min(index, sorted.size() - 1)];
}

double seconds_between(std::chrono::steady_clock::time_point a,
                       std::chrono::steady_clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// What the receivers saw of this run's jobs.
struct Seen {
    std::vector<double> lateness;  // ms, one per job received, in arrival order
    std::size_t early = 0;
    std::size_t duplicates = 0;
    std::unordered_map<std::string, int> copies;
    std::vector<std::vector<double>> series;  // lateness of the releases received per interval
    std::chrono::sys_time<std::chrono::microseconds> first_us{}, last_us{};
};

// One run of the driver: its receivers and exchanges, the publisher thread, the receive loop
// and the report.
class LatenessRun {
public:
    explicit LatenessRun(const Settings& s)
        : s_(s),
          hotspot_(s.pattern == "hotspot"),
          baseline_(s.mode == "baseline"),
          total_(hotspot_ ? s.jobs : static_cast<std::size_t>(s.rate * s.duration_s)),
          run_tag_(std::to_string(std::random_device{}() % 1000000)),
          id_prefix_("bench-" + run_tag_ + "-"),
          out_exchange_(s.target_exchange.empty() ? s.prefix + ".out" : s.target_exchange),
          body_pad_(s.body_bytes, 'x'),
          receivers_(s.amqp_url, s.queues, s.receiving_queue_type),
          random_(s.seed),
          delay_(s.min_delay_ms, s.max_delay_ms) {
        if (!s.target_exchange.empty()) receivers_.first().channel().declare_exchange(out_exchange_, "fanout");
        if (baseline_) {
            out_exchange_ = "hourglass.bench.baseline.out." + run_tag_;
            baseline_queue_ = "hourglass.bench.baseline.ttl." + run_tag_;
            auto& c = receivers_.first().channel();
            c.declare_exchange(out_exchange_, "fanout");
            c.declare_queue(baseline_queue_, {{"x-queue-type", std::string("classic")},
                                              {"x-message-ttl", s.baseline_ttl_ms},
                                              {"x-dead-letter-exchange", out_exchange_}});
        }
        receivers_.subscribe(out_exchange_);
    }

    // Returns the exit status: 0 only if nothing was lost and nothing was early.
    int run() {
        start_steady_ = std::chrono::steady_clock::now();
        start_ = now_ms();
        // hotspot; --cron: a whole second, which the cron expression names
        instant_ = s_.cron ? TimePoint{std::chrono::ceil<std::chrono::seconds>(start_ + Milliseconds{s_.lead_ms})}
                           : start_ + Milliseconds{s_.lead_ms};
        last_due_ms_ = to_epoch_ms(hotspot_ ? instant_ : start_);
        cron_expression_ = cron_expression();
        std::thread publisher([this] { publish(); });
        receive_until_done();
        publisher.join();
        receivers_.stop();
        if (baseline_) receivers_.first().channel().delete_queue(baseline_queue_);
        if (baseline_ || !s_.target_exchange.empty()) {
            receivers_.first().channel().delete_exchange(out_exchange_);
        }
        const auto lost = report();
        std::this_thread::sleep_for(std::chrono::duration<double>(s_.linger_s));
        return lost == 0 && seen_.early == 0 ? 0 : 1;
    }

private:
    using Entry = std::pair<TimePoint, Message>;
    struct Later {
        bool operator()(const Entry& a, const Entry& b) const { return a.first > b.first; }
    };

    std::string cron_expression() const {
        const auto of_day = std::chrono::hh_mm_ss(instant_ - std::chrono::floor<std::chrono::days>(instant_));
        return std::to_string(of_day.seconds().count()) + " " + std::to_string(of_day.minutes().count()) + " " +
               std::to_string(of_day.hours().count()) + " * * *";
    }

    // Job `n`: into `batch` (hourglass), or held until due - ttl (baseline: the driver holds
    // each message like hourglass's loader).
    void make(std::size_t n, std::vector<Message>& batch) {
        const auto id = id_prefix_ + std::to_string(n);
        const auto wait = hotspot_ ? std::int64_t{0} : delay_(random_);
        const auto due = hotspot_ ? instant_ : now_ms() + Milliseconds{wait};
        last_due_ms_ = std::max(last_due_ms_.load(), to_epoch_ms(due));
        Message m;
        m.body = s_.body_bytes > 0 ? body_pad_ : "payload " + id;
        m.routing_key = receivers_.routing_key(n);
        m.properties.message_id = id;
        m.properties.delivery_mode = 2;
        if (baseline_) {
            m.exchange = "";
            m.routing_key = baseline_queue_;
            set_header(m.properties, "x-hourglass-id", id);
            set_header(m.properties, "x-hourglass-due", format_rfc3339_ms(due));
            held_.emplace(due - Milliseconds{s_.baseline_ttl_ms}, std::move(m));
            return;
        }
        m.exchange = s_.prefix + ".in";
        if (hotspot_ && s_.cron) {
            set_header(m.properties, "x-cron", cron_expression_);
            set_header(m.properties, "x-cron-limit", std::int32_t{1});
        } else if (hotspot_) {
            set_header(m.properties, "x-schedule-at", to_epoch_ms(instant_));
        } else {
            set_header(m.properties, "x-delay", wait);
        }
        if (!s_.target_exchange.empty()) set_header(m.properties, "x-hourglass-exchange", s_.target_exchange);
        batch.push_back(std::move(m));
    }

    // How many jobs should have been made by now: all at once (a hotspot, unless paced by
    // --publish-rate), or --rate a second.
    std::size_t may_have_sent() const {
        const auto elapsed = seconds_between(start_steady_, std::chrono::steady_clock::now());
        if (hotspot_ && s_.publish_rate <= 0) return total_;
        const auto rate = hotspot_ ? s_.publish_rate : s_.rate;
        return std::min<std::size_t>(total_, static_cast<std::size_t>(elapsed * rate) + 1);
    }

    // The publisher thread: makes the jobs on their schedule and publishes them with confirms.
    void publish() {
        Client client(s_.amqp_url);
        std::size_t sent = 0;
        std::vector<Message> batch;
        bool all_made_noted = false;
        while (sent < total_ || !held_.empty()) {
            batch.clear();
            const auto may_send = may_have_sent();
            if (hotspot_) {
                while (sent < may_send && batch.size() < s_.chunk && held_.size() < total_) make(sent++, batch);
            } else {
                while (sent < may_send) make(sent++, batch);
            }
            const auto now = now_ms();
            while (!held_.empty() && held_.top().first <= now && batch.size() < s_.chunk) {
                batch.push_back(held_.top().second);
                held_.pop();
            }
            if (!batch.empty()) {
                const bool handing_over = baseline_ && hotspot_;
                if (handing_over && !handover_start_) handover_start_ = std::chrono::steady_clock::now();
                client.publish_all(batch);  // returns once the broker confirmed every publish
                if (handing_over) handover_end_ = std::chrono::steady_clock::now();
            }
            if (sent == total_ && held_.empty() && !all_made_noted) {
                publish_s_ = seconds_between(start_steady_, std::chrono::steady_clock::now());
                all_made_noted = true;
            }
            const bool paced = hotspot_ && s_.publish_rate > 0 && sent < total_;
            if (!hotspot_ || paced || (sent == total_ && (held_.empty() || held_.top().first > now_ms()))) {
                std::this_thread::sleep_for(hotspot_ && !paced ? 200us : 1ms);
            }
        }
        if (!all_made_noted) publish_s_ = seconds_between(start_steady_, std::chrono::steady_clock::now());
        publishing_done_ = true;
        std::this_thread::sleep_for(std::chrono::duration<double>(s_.linger_s));
    }

    void record(const testing::Received& received) {
        const auto id = testing::string_header(received.message, "x-hourglass-id");
        const auto due = parse_rfc3339(testing::string_header(received.message, "x-hourglass-due"));
        if (!due || id.rfind(id_prefix_, 0) != 0) return;
        if (seen_.copies[id]++ > 0) {
            ++seen_.duplicates;
            return;
        }
        if (seen_.lateness.empty()) seen_.first_us = received.received_at_us;
        seen_.last_us = received.received_at_us;
        const auto late_ms = std::chrono::duration<double, std::milli>(received.received_at_us - *due).count();
        if (late_ms < 0) ++seen_.early;
        seen_.lateness.push_back(late_ms);
        if (s_.series_every_s > 0) {
            const auto since_start = std::chrono::duration<double>(
                received.received_at_us - std::chrono::time_point_cast<std::chrono::microseconds>(start_));
            const auto bin = static_cast<std::size_t>(std::max(0.0, since_start.count()) / s_.series_every_s);
            if (seen_.series.size() <= bin) seen_.series.resize(bin + 1);
            seen_.series[bin].push_back(late_ms);
        }
    }

    // Until every job was received (and a moment more, for duplicates that follow closely), or
    // --drain past the last due time.
    void receive_until_done() {
        seen_.lateness.reserve(total_);
        seen_.copies.reserve(total_);
        while (true) {
            if (auto received = receivers_.receive(200ms)) record(*received);
            if (publishing_done_ && seen_.copies.size() >= total_) {
                while (auto extra = receivers_.receive(500ms)) {
                    const auto id = testing::string_header(extra->message, "x-hourglass-id");
                    if (id.rfind(id_prefix_, 0) == 0 && seen_.copies[id]++ > 0) ++seen_.duplicates;
                }
                return;
            }
            const auto deadline = from_epoch_ms(last_due_ms_.load()) +
                                  std::chrono::duration_cast<Milliseconds>(std::chrono::duration<double>(s_.drain_s));
            if (publishing_done_ && now_ms() > deadline) return;
        }
    }

    // The hotspot's figures: the drain, and the driver's own hand-over (baseline).
    void add_hotspot_figures(nlohmann::json& result, const std::vector<double>& sorted, double span_s) const {
        const auto within = static_cast<std::size_t>(
            std::upper_bound(sorted.begin(), sorted.end(), s_.within_s * 1000.0) - sorted.begin());
        result["instant"] = format_rfc3339_ms(instant_);
        result["lead_s"] = static_cast<double>(s_.lead_ms) / 1000.0;
        // How long before the instant the last command was confirmed by the broker.
        result["published_ahead_s"] = static_cast<double>(s_.lead_ms) / 1000.0 - publish_s_;
        result["within_s"] = s_.within_s;
        result["released_within"] = within;
        result["release_span_s"] = span_s;
        result["drain_rate_per_s"] = span_s > 0 ? static_cast<double>(seen_.copies.size()) / span_s : 0.0;
        result["baseline_ttl_ms"] = baseline_ ? s_.baseline_ttl_ms : 0;
        if (s_.publish_rate > 0) result["publish_rate_per_s"] = s_.publish_rate;
        if (handover_start_ && handover_end_) {
            const double handover_s = seconds_between(*handover_start_, *handover_end_);
            result["handed_over_span_s"] = handover_s;
            result["handed_over_per_s"] = handover_s > 0 ? static_cast<double>(total_) / handover_s : 0.0;
            result["confirm_window"] = s_.chunk;
        }
    }

    nlohmann::json series_figures() {
        auto out = nlohmann::json::array();
        for (std::size_t bin = 0; bin < seen_.series.size(); ++bin) {
            auto& values = seen_.series[bin];
            std::sort(values.begin(), values.end());
            out.push_back({{"t_s", static_cast<double>(bin + 1) * s_.series_every_s},
                           {"releases", values.size()},
                           {"lateness_p50_ms", percentile(values, 0.50)},
                           {"lateness_p99_ms", percentile(values, 0.99)},
                           {"lateness_max_ms", percentile(values, 1.0)}});
        }
        return out;
    }

    // Prints the table row and the JSON line; returns the jobs lost.
    std::size_t report() {
        std::vector<double> sorted = seen_.lateness;
        std::sort(sorted.begin(), sorted.end());
        const auto lost = total_ - seen_.copies.size();
        const double span_s = std::chrono::duration<double>(seen_.last_us - seen_.first_us).count();
        nlohmann::json result = {{"scenario", s_.scenario},
                                 {"mode", s_.mode},
                                 {"targeted", !s_.target_exchange.empty()},
                                 {"cron", s_.cron},
                                 {"pattern", s_.pattern},
                                 {"jobs", total_},
                                 {"received", seen_.copies.size()},
                                 {"lost", lost},
                                 {"early", seen_.early},
                                 {"duplicates", seen_.duplicates},
                                 {"lateness_p50_ms", percentile(sorted, 0.50)},
                                 {"lateness_p99_ms", percentile(sorted, 0.99)},
                                 {"lateness_max_ms", percentile(sorted, 1.0)},
                                 {"lateness_min_ms", percentile(sorted, 0.0)},
                                 {"publish_s", publish_s_},
                                 {"queues", s_.queues},
                                 {"receiving_queue_type", s_.receiving_queue_type}};
        if (hotspot_) {
            add_hotspot_figures(result, sorted, span_s);
        } else {
            result["rate"] = s_.rate;
            result["duration_s"] = s_.duration_s;
            result["min_delay_ms"] = s_.min_delay_ms;
            result["max_delay_ms"] = s_.max_delay_ms;
        }
        if (s_.series_every_s > 0) result["series"] = series_figures();
        std::printf("%-10s %-10s jobs %7zu  lost %zu  early %zu  dup %zu  lateness p50 %.2f ms  p99 %.2f ms  "
                    "max %.2f ms  min %.2f ms",
                    s_.scenario.c_str(), s_.mode.c_str(), total_, lost, seen_.early, seen_.duplicates,
                    percentile(sorted, 0.5), percentile(sorted, 0.99), percentile(sorted, 1.0),
                    percentile(sorted, 0.0));
        if (hotspot_) std::printf("  drain %.0f/s over %.2f s", result["drain_rate_per_s"].get<double>(), span_s);
        std::printf("\n");
        std::cout << result.dump() << std::endl;
        return lost;
    }

    const Settings& s_;
    const bool hotspot_;
    const bool baseline_;
    const std::size_t total_;
    const std::string run_tag_;
    const std::string id_prefix_;
    std::string out_exchange_;
    const std::string body_pad_;  // --body-bytes of each job's body
    std::string baseline_queue_;
    Receivers receivers_;
    std::mt19937_64 random_;
    std::uniform_int_distribution<std::int64_t> delay_;
    std::chrono::steady_clock::time_point start_steady_;
    TimePoint start_{};
    TimePoint instant_{};
    std::string cron_expression_;  // --cron: the instant's second of the day
    std::atomic<bool> publishing_done_{false};
    std::atomic<std::int64_t> last_due_ms_{0};
    std::priority_queue<Entry, std::vector<Entry>, Later> held_;  // publisher thread only
    double publish_s_ = 0;  // steady clock: start .. every command confirmed; read after join
    // baseline hotspot: the driver's own hand-over of the burst into its TTL queue, first
    // publish to last confirm (the broker's confirmed publish rate, beside hourglass's loader)
    std::optional<std::chrono::steady_clock::time_point> handover_start_, handover_end_;
    Seen seen_;
};

}  // namespace

int main(int argc, char** argv) {
    Settings s;
    CLI::App app{"hourglass end-to-end lateness benchmark (steady precision, hotspot)"};
    app.add_option("--mode", s.mode)->check(CLI::IsMember({"hourglass", "baseline"}));
    app.add_option("--pattern", s.pattern)->check(CLI::IsMember({"steady", "hotspot"}));
    app.add_option("--amqp-url", s.amqp_url)->envname("HOURGLASS_AMQP_URL")->required();
    app.add_option("--prefix", s.prefix);
    app.add_option("--scenario", s.scenario, "label in the output");
    app.add_option("--rate", s.rate, "steady: jobs per second");
    app.add_option("--duration", s.duration_s, "steady: seconds of publishing");
    app.add_option("--min-delay", s.min_delay_ms, "steady: shortest delay, ms");
    app.add_option("--max-delay", s.max_delay_ms, "steady: longest delay, ms");
    app.add_option("--jobs", s.jobs, "hotspot: number of jobs");
    app.add_option("--lead", s.lead_ms, "hotspot: ms from the start to the instant all are due");
    app.add_option("--within", s.within_s, "hotspot: target, seconds after the instant");
    app.add_option("--publish-rate", s.publish_rate,
                   "hotspot: publish at most this many jobs a second (0: as fast as the broker "
                   "takes them), e.g. a hotspot scheduled within the horizon over its lead");
    app.add_option("--baseline-ttl", s.baseline_ttl_ms, "baseline: the TTL queue's x-message-ttl");
    app.add_option("--chunk", s.chunk, "publishes per wait for confirms");
    app.add_option("--queues", s.queues,
                   "hourglass: receiving queues the jobs are split over by routing key")
        ->check(CLI::Range(1, 64));
    app.add_option("--receiving-queue-type", s.receiving_queue_type,
                   "the receiving queues' type (quorum: durable, deleted at the end)")
        ->check(CLI::IsMember({"classic", "quorum"}));
    app.add_option("--target-exchange", s.target_exchange,
                   "hourglass: release every job to this fanout exchange (x-hourglass-exchange), "
                   "declared and deleted by the driver");
    app.add_flag("--cron", s.cron,
                 "hourglass hotspot: recurring jobs (x-cron at the instant, rounded up to a "
                 "whole second; x-cron-limit 1)");
    app.add_option("--body-bytes", s.body_bytes, "body size (0: a short text)");
    app.add_option("--drain", s.drain_s, "seconds to wait after the last due time");
    app.add_option("--seed", s.seed);
    app.add_option("--series-every", s.series_every_s,
                   "seconds per interval of a lateness time series (by receive time; 0: none)");
    app.add_option("--linger", s.linger_s,
                   "seconds to keep the connections open at the end (the management API counts "
                   "what a channel did only at its next statistics interval)");
    CLI11_PARSE(app, argc, argv);
    if (s.mode == "baseline" && (s.queues > 1 || !s.target_exchange.empty() || s.cron)) {
        std::cerr << "--queues, --target-exchange, --cron: only with --mode hourglass\n";
        return 2;
    }

    return LatenessRun(s).run();
}
