// End-to-end ingest driver: publishes schedule commands as fast as the broker takes them
// (persistent, publisher confirms, --window publishes in flight per wait) for --duration s and
// measures how fast they are taken off the input queue, committed and acked.
//
// --mode hourglass   commands go to <prefix>.in (x-delay far in the future, so every job stays
//                    pending); acked(t) = confirmed publishes(t) - ready messages in <prefix>.in
//                    (passive declare, sampled every --sample s; hourglass acks a batch only after
//                    its commit, so this is the committed count to within its prefetch window).
//                    With --pg-url the committed rows are counted exactly at the end.
// --mode baseline    the broker's own limit: the same commands go to a durable topic exchange and
//                    queue of their own, and a consumer in this process takes them with manual
//                    acks (prefetch and batches as hourglass's ingest, no database).
//
// "sustained" is the acked rate between --warmup s and the end of publishing; "total" also
// counts the time to drain the backlog after publishing stopped.
//
// --phase live     (default) publish and consume at the same time, as above. With --receipts
//                  (hourglass mode) every command asks for a receipt (x-reply-to) into an
//                  exclusive queue of this run, read by a consumer of its own; the drain then
//                  also waits for every receipt.
// --phase fill     hourglass mode: publish --backlog commands into <prefix>.in (hourglass must
//                  not be running) and exit
// --phase drain    hourglass mode: wait for hourglass (started after this) to take a backlog of
//                  --backlog commands; baseline mode: fill the baseline queue, then consume it.
//                  The rate is taken between 10 % and 90 % drained (start-up and tail left out):
//                  the consumer's capacity with no publisher competing for the machine.
//
// Prints a table row, then one JSON line (the last line of the output).
#include <CLI/CLI.hpp>
#include <atomic>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <random>
#include <thread>

#include "hourglass/command.hpp"
#include "support/amqp_client.hpp"

using namespace hourglass;
using namespace std::chrono_literals;
using hourglass::testing::Client;
using Clock = std::chrono::steady_clock;

namespace {

struct Settings {
    std::string mode = "hourglass";
    std::string amqp_url;
    std::string pg_url;
    std::string schema = "hourglass";
    std::string prefix = "hourglass";
    std::string scenario = "ingest";
    std::string ids = "uuid";
    double duration_s = 60;
    double warmup_s = 5;
    double sample_s = 1;
    double drain_timeout_s = 600;
    std::size_t window = 2000;
    std::size_t body_bytes = 32;
    std::int64_t delay_ms = 7LL * 24 * 3600 * 1000;
    std::uint16_t prefetch = 2000;
    std::size_t batch = 500;
    std::string phase = "live";
    std::size_t backlog = 300000;
    double linger_s = 0;
    bool receipts = false;
};

void linger(const Settings& s) { std::this_thread::sleep_for(std::chrono::duration<double>(s.linger_s)); }

struct Sample {
    double t;
    std::uint64_t published;
    std::uint64_t acked;
    std::uint64_t receipts;
};

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// `reply_to`: the queue each command asks its receipt into (none when empty).
std::vector<Message> make_commands(const Settings& s, const std::string& exchange,
                                   const std::string& run_tag, std::uint64_t& n, std::size_t count,
                                   const std::string& reply_to = {}) {
    const std::string body(s.body_bytes, 'b');
    std::vector<Message> chunk;
    chunk.reserve(count);
    for (std::size_t i = 0; i < count; ++i, ++n) {
        Message m;
        m.exchange = exchange;
        m.routing_key = "bench.ingest";
        m.body = body;
        m.properties.message_id =
            s.ids == "uuid" ? generate_uuid() : "ingest-" + run_tag + "-" + std::to_string(n);
        m.properties.delivery_mode = 2;
        set_header(m.properties, "x-delay", s.delay_ms);
        if (!reply_to.empty()) set_header(m.properties, std::string(header::kReplyTo), reply_to);
        chunk.push_back(std::move(m));
    }
    return chunk;
}

// Pending rows of this run's jobs: unclaimed, due within the window their x-delay gives
// (an index range scan of jobs_claimable_due_at, cheap even with millions of other rows).
// The baseline's consumer: acks in batches of --batch (as hourglass's ingest acks after each
// commit), counting what it acked, until told to stop.
std::thread start_batch_acking_consumer(const Settings& s, const std::string& queue,
                                        std::atomic<std::uint64_t>& consumed,
                                        const std::atomic<bool>& stop_consuming) {
    return std::thread([&s, queue, &consumed, &stop_consuming] {
        Client client(s.amqp_url);
        auto& c = client.connection();
        auto& channel = client.channel();
        channel.set_prefetch(s.prefetch);
        channel.consume(queue);
        std::uint64_t unacked = 0, last_tag = 0;
        while (!stop_consuming) {
            auto event = c.next_event(unacked ? std::chrono::microseconds{0} : std::chrono::microseconds{100000});
            if (event) {
                if (auto* delivery = std::get_if<amqp::Delivery>(&*event)) {
                    last_tag = delivery->delivery_tag;
                    if (++unacked < s.batch) continue;
                } else {
                    continue;
                }
            }
            if (unacked) {
                channel.ack(last_tag, /*multiple=*/true);
                consumed += unacked;
                unacked = 0;
            }
        }
        linger(s);
    });
}

// --receipts: an exclusive queue of this run (named once declared) and a consumer counting
// what arrives in it, until told to stop.
class ReceiptReader {
  public:
    ReceiptReader(const Settings& s, const std::atomic<bool>& stop) {
        std::promise<std::string> named;
        auto name = named.get_future();
        thread_ = std::thread([this, &s, &stop, named = std::move(named)]() mutable {
            std::optional<Client> client;
            try {
                client.emplace(s.amqp_url);
                named.set_value(client->receipt_queue());
            } catch (...) {
                named.set_exception(std::current_exception());
                return;
            }
            while (!stop) {
                if (client->receive(100ms)) ++received_;
            }
            linger(s);
        });
        try {
            queue_ = name.get();
        } catch (...) {
            thread_.join();
            throw;
        }
    }
    ~ReceiptReader() { thread_.join(); }
    ReceiptReader(const ReceiptReader&) = delete;
    ReceiptReader& operator=(const ReceiptReader&) = delete;
    const std::string& queue() const { return queue_; }
    std::uint64_t received() const { return received_.load(); }

  private:
    std::string queue_;
    std::atomic<std::uint64_t> received_{0};
    std::thread thread_;
};

std::uint64_t count_rows(const Settings& s, double elapsed_s) {
    pqxx::connection db(s.pg_url);
    pqxx::nontransaction tx(db);
    const auto now = to_epoch_ms(now_ms());
    const auto from = now + s.delay_ms - static_cast<std::int64_t>(elapsed_s * 1000) - 600000;
    const auto to = now + s.delay_ms + 600000;
    return tx.exec_params1("SELECT /* bench */ count(*) FROM " + db.quote_name(s.schema) +
                               ".jobs WHERE state = 'pending' AND lease_owner IS NULL AND "
                               "due_at >= to_timestamp($1 / 1000.0) AND due_at < to_timestamp($2 / 1000.0)",
                           from, to)[0]
        .as<std::uint64_t>();
}

// Where commands go: hourglass's input exchange and queue, or (baseline) a durable topic
// exchange and classic queue of this run, declared here.
struct Input {
    std::string run_tag;
    std::string exchange;
    std::string queue;
};

Input input_of(const Settings& s, Client& monitor) {
    const auto run_tag = std::to_string(std::random_device{}() % 1000000);
    if (s.mode != "baseline") return {run_tag, s.prefix + ".in", s.prefix + ".in"};
    Input input{run_tag, "hourglass.bench.ingest." + run_tag, "hourglass.bench.ingest." + run_tag};
    auto& c = monitor.channel();
    c.declare_exchange(input.exchange, "topic");
    c.declare_queue(input.queue, {{"x-queue-type", std::string("classic")}});
    c.bind_queue(input.queue, input.exchange, "#");
    return input;
}

// --phase fill / drain.
int run_backlog(const Settings& s) {
    const bool baseline = s.mode == "baseline";
    Client monitor(s.amqp_url);
    const auto [run_tag, exchange, queue] = input_of(s, monitor);
    auto fill = [&] {
        Client client(s.amqp_url);
        std::uint64_t n = 0;
        const auto start = Clock::now();
        while (n < s.backlog) client.publish_all(make_commands(s, exchange, run_tag, n, std::min<std::size_t>(s.window, s.backlog - n)));
        const double rate = static_cast<double>(n) / since(start);
        if (s.phase == "fill") linger(s);
        return rate;
    };
    if (s.phase == "fill") {
        const double rate = fill();
        nlohmann::json result = {{"scenario", s.scenario}, {"mode", s.mode}, {"phase", "fill"},
                                 {"published", s.backlog}, {"published_per_s", rate}};
        std::printf("%-10s %-10s filled %zu commands at %.0f/s\n", s.scenario.c_str(), s.mode.c_str(), s.backlog, rate);
        std::cout << result.dump() << std::endl;
        return 0;
    }
    double fill_rate = 0;
    if (baseline) fill_rate = fill();

    const auto initial = static_cast<std::uint64_t>(monitor.queue_size(queue).value_or(0));
    std::atomic<std::uint64_t> consumed{0};
    std::atomic<bool> stop_consuming{false};
    std::thread consumer;
    if (baseline) {
        consumer = start_batch_acking_consumer(s, queue, consumed, stop_consuming);
    }
    // Taken off the queue (hourglass: acked after commit, to within its prefetch window).
    auto taken = [&]() -> std::uint64_t {
        if (baseline) return consumed.load();
        const auto ready = static_cast<std::uint64_t>(monitor.queue_size(queue).value_or(0));
        return initial > ready ? initial - ready : 0;
    };
    const auto start = Clock::now();
    std::optional<double> t10, t90, t_done;
    std::optional<std::uint64_t> rows;
    while (since(start) < s.drain_timeout_s) {
        const auto n = taken();
        const double t = since(start);
        if (!t10 && n >= initial / 10) t10 = t;
        if (!t90 && n >= initial * 9 / 10) t90 = t;
        if (n >= initial) {
            if (baseline || s.pg_url.empty()) { t_done = t; break; }
            rows = count_rows(s, t + 60);
            if (*rows >= initial) { t_done = since(start); break; }
        }
        std::this_thread::sleep_for(50ms);
    }
    stop_consuming = true;
    if (consumer.joinable()) consumer.join();
    if (baseline) {
        monitor.channel().delete_queue(queue);
        monitor.channel().delete_exchange(exchange);
    }
    const double rate = (t10 && t90 && *t90 > *t10) ? 0.8 * static_cast<double>(initial) / (*t90 - *t10) : 0;
    nlohmann::json result = {{"scenario", s.scenario}, {"mode", s.mode}, {"phase", "drain"},
                             {"backlog", initial}, {"drained", t_done.has_value()},
                             {"drain_per_s", rate}, {"drain_s", t_done ? *t_done : -1.0}};
    if (baseline) result["fill_per_s"] = fill_rate;
    if (rows) result["committed_rows"] = *rows;
    std::printf("%-10s %-10s backlog %llu drained %s at %.0f/s (10-90 %%)%s\n", s.scenario.c_str(),
                s.mode.c_str(), static_cast<unsigned long long>(initial), t_done ? "yes" : "NO", rate,
                rows ? (", rows " + std::to_string(*rows)).c_str() : "");
    std::cout << result.dump() << std::endl;
    return t_done ? 0 : 1;
}

// --phase live: publishes as fast as the broker takes commands while hourglass (or the
// baseline's consumer) takes them, sampling the acked count every --sample s; then waits for
// the backlog to drain.
class LiveRun {
public:
    explicit LiveRun(const Settings& s)
        : s_(s), baseline_(s.mode == "baseline"), monitor_(s.amqp_url), input_(input_of(s, monitor_)),
          ready_at_start_(monitor_.queue_size(input_.queue).value_or(0)) {
        if (s.receipts) receipts_.emplace(s, stop_consuming_);
    }

    // Returns the exit status: 0 once drained.
    int run() {
        start_ = Clock::now();
        std::thread publisher([this] { publish_until_stopped(); });
        std::thread consumer;
        if (baseline_) consumer = start_batch_acking_consumer(s_, input_.queue, consumed_, stop_consuming_);
        const auto at_warmup = sample_until_the_end();
        stop_publishing_ = true;
        while (!publisher_finished_) std::this_thread::sleep_for(1ms);  // its last chunk confirmed
        sample();
        const Sample at_end = samples_.back();
        const auto drained_s = drain(published_.load());
        stop_consuming_ = true;
        publisher.join();
        if (consumer.joinable()) consumer.join();
        const auto receipts_received = receipts_now();
        receipts_.reset();
        if (baseline_) {
            monitor_.channel().delete_queue(input_.queue);
            monitor_.channel().delete_exchange(input_.exchange);
        }
        report(at_warmup.value_or(samples_.front()), at_end, drained_s, receipts_received);
        return drained_s > 0 ? 0 : 1;
    }

private:
    void publish_until_stopped() {
        Client client(s_.amqp_url);
        const std::string reply_to = receipts_ ? receipts_->queue() : std::string();
        std::uint64_t n = 0;
        while (!stop_publishing_) {
            const auto chunk = make_commands(s_, input_.exchange, input_.run_tag, n, s_.window, reply_to);
            client.publish_all(chunk);
            published_ += chunk.size();
        }
        publish_end_s_ = since(start_);
        publisher_finished_ = true;
        linger(s_);
    }
    std::uint64_t receipts_now() const { return receipts_ ? receipts_->received() : 0; }
    std::uint64_t acked_now() {
        const auto pub = published_.load();
        if (baseline_) return consumed_.load();
        const auto ready = monitor_.queue_size(input_.queue).value_or(0);
        const auto in_queue = ready > ready_at_start_ ? ready - ready_at_start_ : 0;
        return pub > in_queue ? pub - in_queue : 0;
    }
    void sample() {
        // Read the published count first: a publish confirmed after it can only make acked low.
        const auto pub = published_.load();
        const auto acked = acked_now();
        samples_.push_back({since(start_), pub, std::min(acked, pub), receipts_now()});
    }
    // Samples until --duration; returns the sample at --warmup.
    std::optional<Sample> sample_until_the_end() {
        auto next = start_;
        std::optional<Sample> at_warmup;
        while (since(start_) < s_.duration_s) {
            next += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s_.sample_s));
            std::this_thread::sleep_until(next);
            sample();
            if (!at_warmup && samples_.back().t >= s_.warmup_s) at_warmup = samples_.back();
        }
        return at_warmup;
    }
    // Until every confirmed command is acked (baseline) or the queue is empty and the rows are
    // there (hourglass); returns when (seconds from the start), or -1 if it never drained.
    double drain(std::uint64_t total) {
        while (since(start_) < publish_end_s_ + s_.drain_timeout_s) {
            if (baseline_) {
                if (consumed_.load() >= total) return since(start_);
                std::this_thread::sleep_for(20ms);
                continue;
            }
            const auto ready = monitor_.queue_size(input_.queue).value_or(0);
            if (ready <= ready_at_start_) {
                if (s_.pg_url.empty()) return since(start_);
                committed_rows_ = count_rows(s_, since(start_));
                if (*committed_rows_ >= total && (!receipts_ || receipts_now() >= total)) return since(start_);
                std::this_thread::sleep_for(200ms);
            } else {
                std::this_thread::sleep_for(100ms);
            }
            if (samples_.back().t + s_.sample_s <= since(start_)) sample();
        }
        return -1;
    }
    void report(const Sample& from, const Sample& at_end, double drained_s, std::uint64_t receipts_received) const {
        const auto total = published_.load();
        const double window_s = at_end.t - from.t;
        const auto per_s = [&](std::uint64_t count) { return window_s > 0 ? static_cast<double>(count) / window_s : 0; };
        const double sustained = per_s(at_end.acked - from.acked);
        const double published_rate = per_s(at_end.published - from.published);
        const double receipts_rate = per_s(at_end.receipts - from.receipts);
        const double total_rate = drained_s > 0 ? static_cast<double>(total) / drained_s : 0;
        double min_rate = 0;
        for (std::size_t i = 1; i < samples_.size(); ++i) {
            if (samples_[i].t < s_.warmup_s || samples_[i].t > at_end.t) continue;
            const double r = static_cast<double>(samples_[i].acked - samples_[i - 1].acked) / (samples_[i].t - samples_[i - 1].t);
            if (min_rate == 0 || r < min_rate) min_rate = r;
        }
        nlohmann::json series = nlohmann::json::array();
        for (const auto& x : samples_) series.push_back({std::round(x.t * 10) / 10, x.published, x.acked});
        nlohmann::json result = {{"scenario", s_.scenario},
                                 {"mode", s_.mode},
                                 {"duration_s", s_.duration_s},
                                 {"ids", s_.ids},
                                 {"body_bytes", s_.body_bytes},
                                 {"published", total},
                                 {"published_per_s", published_rate},
                                 {"acked_per_s", sustained},
                                 {"acked_per_s_min_1s", min_rate},
                                 {"backlog_at_end", at_end.published - at_end.acked},
                                 {"drained", drained_s > 0},
                                 {"drain_s", drained_s > 0 ? drained_s - at_end.t : -1.0},
                                 {"total_per_s", total_rate},
                                 {"series_t_published_acked", series}};
        if (committed_rows_) result["committed_rows"] = *committed_rows_;
        if (s_.receipts) {
            result["receipts"] = receipts_received;
            result["receipts_per_s"] = receipts_rate;
        }
        std::printf("%-10s %-10s published %8llu (%.0f/s)  acked %.0f/s sustained (min 1 s: %.0f/s)  backlog %llu  "
                    "drained %s in %.1f s  overall %.0f/s%s\n",
                    s_.scenario.c_str(), s_.mode.c_str(), static_cast<unsigned long long>(total), published_rate,
                    sustained, min_rate, static_cast<unsigned long long>(at_end.published - at_end.acked),
                    drained_s > 0 ? "yes" : "NO", drained_s > 0 ? drained_s - at_end.t : -1.0, total_rate,
                    committed_rows_ ? (" rows " + std::to_string(*committed_rows_)).c_str() : "");
        if (s_.receipts) {
            std::printf("%-10s %-10s receipts %llu (%.0f/s sustained)\n", s_.scenario.c_str(), s_.mode.c_str(),
                        static_cast<unsigned long long>(receipts_received), receipts_rate);
        }
        std::cout << result.dump() << std::endl;
    }

    const Settings& s_;
    const bool baseline_;
    Client monitor_;
    const Input input_;
    const std::uint64_t ready_at_start_;
    std::atomic<std::uint64_t> published_{0};  // confirmed by the broker
    std::atomic<std::uint64_t> consumed_{0};   // baseline: acked by our consumer
    std::atomic<bool> stop_publishing_{false};
    std::atomic<bool> stop_consuming_{false};
    std::atomic<bool> publisher_finished_{false};
    std::atomic<double> publish_end_s_{0};
    std::optional<ReceiptReader> receipts_;
    Clock::time_point start_;
    std::vector<Sample> samples_;
    std::optional<std::uint64_t> committed_rows_;
};

}  // namespace

int main(int argc, char** argv) {
    Settings s;
    CLI::App app{"hourglass end-to-end ingest benchmark"};
    app.add_option("--mode", s.mode)->check(CLI::IsMember({"hourglass", "baseline"}));
    app.add_option("--amqp-url", s.amqp_url)->envname("HOURGLASS_AMQP_URL")->required();
    app.add_option("--pg-url", s.pg_url, "hourglass mode: count the committed rows at the end");
    app.add_option("--schema", s.schema);
    app.add_option("--prefix", s.prefix);
    app.add_option("--scenario", s.scenario, "label in the output");
    app.add_option("--ids", s.ids, "job ids: uuid (random, as most publishers) or sequential")
        ->check(CLI::IsMember({"uuid", "sequential"}));
    app.add_option("--duration", s.duration_s, "seconds of publishing");
    app.add_option("--warmup", s.warmup_s, "seconds left out of the sustained rate");
    app.add_option("--sample", s.sample_s, "seconds between samples");
    app.add_option("--drain-timeout", s.drain_timeout_s, "seconds to wait for the backlog to drain");
    app.add_option("--window", s.window, "publishes per wait for confirms");
    app.add_option("--body-bytes", s.body_bytes);
    app.add_option("--delay", s.delay_ms, "x-delay of every command, ms");
    app.add_option("--prefetch", s.prefetch, "baseline consumer prefetch");
    app.add_option("--batch", s.batch, "baseline consumer: messages per ack");
    app.add_option("--phase", s.phase)->check(CLI::IsMember({"live", "fill", "drain"}));
    app.add_option("--backlog", s.backlog, "fill/drain: number of commands");
    app.add_flag("--receipts", s.receipts,
                 "live phase, hourglass mode: every command asks for a receipt (x-reply-to), "
                 "counted by a consumer; the drain waits for all of them");
    app.add_option("--linger", s.linger_s,
                   "seconds to keep the connections open at the end (the management API counts "
                   "what a channel did only at its next statistics interval)");
    CLI11_PARSE(app, argc, argv);
    if (s.phase == "fill" && s.mode == "baseline") {
        std::cerr << "--phase fill is for --mode hourglass (baseline fills in --phase drain)\n";
        return 2;
    }
    if (s.receipts && (s.mode == "baseline" || s.phase != "live")) {
        std::cerr << "--receipts is for --mode hourglass --phase live\n";
        return 2;
    }
    if (s.phase != "live") return run_backlog(s);

    return LiveRun(s).run();
}
