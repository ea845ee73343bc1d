// End-to-end driver of the SQL intake (reference §3.4): applications insert commands into
// <schema>.commands in their own transactions; hourglass takes them.
//
// --phase fill    insert --count commands (x-delay far ahead: every job stays pending), 1,000
//                 per transaction; hourglass should not run yet
// --phase drain   wait until hourglass (started after this) has taken --count commands (their
//                 receipts); the rate is taken between 10 % and 90 % taken (start-up and tail
//                 left out): the intake's capacity with nothing else competing
// --phase live    --writers connections each commit one command per transaction, together
//                 --rate a second, for --duration s; then wait for every receipt. Reports the
//                 time from each COMMIT (as the writer saw it return) to the start of the
//                 intake transaction that took the command (its receipt's decided_at; the job
//                 is visible once that transaction commits, a few ms later)
//
// Prints a table row, then one JSON line (the last line of the output).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

struct Settings {
    std::string pg_url;
    std::string schema = "hourglass";
    std::string phase = "live";
    std::size_t count = 20000;
    double rate = 500;
    double duration_s = 30;
    int writers = 4;
    double timeout_s = 600;
};

std::int64_t receipts(pqxx::connection& connection, const std::string& schema) {
    pqxx::read_transaction tx(connection);
    return tx.exec1("SELECT count(*) FROM " + tx.quote_name(schema) + ".command_receipts")[0].as<std::int64_t>();
}

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

int fill(const Settings& s) {
    pqxx::connection connection(s.pg_url);
    const auto start = Clock::now();
    for (std::size_t done = 0; done < s.count;) {
        const auto n = std::min<std::size_t>(1000, s.count - done);
        pqxx::work tx(connection);
        tx.exec_params("INSERT INTO " + tx.quote_name(s.schema) +
                           ".commands (routing_key, headers) SELECT 'bench.sql.' || i, "
                           "'{\"x-delay\": 864000000}' FROM generate_series(1, $1::int) AS i",
                       static_cast<int>(n));
        tx.commit();
        done += n;
    }
    const nlohmann::json result = {{"phase", "fill"}, {"count", s.count}, {"seconds", since(start)}};
    std::cout << "filled " << s.count << " commands in " << since(start) << " s\n" << result.dump() << "\n";
    return 0;
}

int drain(const Settings& s) {
    pqxx::connection connection(s.pg_url);
    const auto base = receipts(connection, s.schema);
    const auto target = static_cast<std::int64_t>(s.count);
    std::optional<Clock::time_point> at10, at90;
    const auto start = Clock::now();
    while (since(start) < s.timeout_s) {
        const auto taken = receipts(connection, s.schema) - base;
        if (!at10 && taken >= target / 10) at10 = Clock::now();
        if (!at90 && taken >= target * 9 / 10) at90 = Clock::now();
        if (taken >= target) break;
        std::this_thread::sleep_for(50ms);
    }
    if (!at10 || !at90) {
        std::cerr << "drain: not taken within " << s.timeout_s << " s\n";
        return 1;
    }
    const double seconds = std::chrono::duration<double>(*at90 - *at10).count();
    const double per_s = seconds > 0 ? (target * 0.8) / seconds : 0;
    const nlohmann::json result = {{"phase", "drain"}, {"backlog", s.count}, {"taken_per_s", per_s},
                                   {"total_s", since(start)}};
    std::printf("sql intake drain: %zu commands, %.0f commands/s (10-90 %%)\n", s.count, per_s);
    std::cout << result.dump() << "\n";
    return 0;
}

double percentile(std::vector<double> values, double p) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const auto index = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
    return values[std::min(index, values.size() - 1)];
}

int live(const Settings& s) {
    std::mutex mutex;
    std::vector<std::pair<std::int64_t, double>> committed;  // command id, commit (epoch ms)
    std::atomic<bool> failed = false;
    const auto start = Clock::now();
    const auto per_writer = s.rate / s.writers;
    std::vector<std::jthread> writers;
    for (int w = 0; w < s.writers; ++w) {
        writers.emplace_back([&, w] {
            try {
                pqxx::connection connection(s.pg_url);
                const auto insert = "INSERT INTO " + connection.quote_name(s.schema) +
                                    ".commands (routing_key, headers) VALUES ($1, "
                                    "'{\"x-delay\": 864000000}') RETURNING id";
                for (std::size_t i = 0;; ++i) {
                    const auto due = start + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(i / per_writer));
                    if (std::chrono::duration<double>(due - start).count() >= s.duration_s) break;
                    std::this_thread::sleep_until(due);
                    pqxx::work tx(connection);
                    const auto id = tx.exec_params1(insert, "bench.sql.live." + std::to_string(w))[0]
                                        .as<std::int64_t>();
                    tx.commit();
                    const double at = std::chrono::duration<double, std::milli>(
                                          std::chrono::system_clock::now().time_since_epoch()).count();
                    std::lock_guard lock(mutex);
                    committed.emplace_back(id, at);
                }
            } catch (const std::exception& error) {
                std::cerr << "writer: " << error.what() << "\n";
                failed = true;
            }
        });
    }
    writers.clear();  // joins
    const double publish_s = since(start);
    if (failed) return 1;
    pqxx::connection connection(s.pg_url);
    nlohmann::json ids = nlohmann::json::array();
    for (const auto& [id, at] : committed) ids.push_back(id);
    std::vector<double> lag_ms;
    const auto deadline = Clock::now() + std::chrono::duration<double>(s.timeout_s);
    while (Clock::now() < deadline) {
        pqxx::read_transaction tx(connection);
        const auto rows = tx.exec_params(
            "SELECT command_id, extract(epoch FROM decided_at) * 1000 FROM " + tx.quote_name(s.schema) +
                ".command_receipts WHERE command_id IN (SELECT (jsonb_array_elements_text($1::jsonb))::bigint)",
            ids.dump());
        if (rows.size() < committed.size()) {
            std::this_thread::sleep_for(200ms);
            continue;
        }
        std::unordered_map<std::int64_t, double> decided;
        for (const auto& row : rows) decided.emplace(row[0].as<std::int64_t>(), row[1].as<double>());
        for (const auto& [id, at] : committed) lag_ms.push_back(std::max(0.0, decided.at(id) - at));
        break;
    }
    if (lag_ms.size() != committed.size()) {
        std::cerr << "live: not every command was taken within " << s.timeout_s << " s\n";
        return 1;
    }
    const nlohmann::json result = {{"phase", "live"},
                                   {"commands", committed.size()},
                                   {"committed_per_s", committed.size() / publish_s},
                                   {"commit_to_taken_p50_ms", percentile(lag_ms, 0.5)},
                                   {"commit_to_taken_p99_ms", percentile(lag_ms, 0.99)},
                                   {"commit_to_taken_max_ms", percentile(lag_ms, 1.0)}};
    std::printf("sql intake live: %zu commands at %.0f/s; COMMIT -> taken p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
                committed.size(), committed.size() / publish_s, percentile(lag_ms, 0.5),
                percentile(lag_ms, 0.99), percentile(lag_ms, 1.0));
    std::cout << result.dump() << "\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Settings s;
    CLI::App app{"SQL intake driver"};
    app.add_option("--pg-url", s.pg_url)->required();
    app.add_option("--schema", s.schema);
    app.add_option("--phase", s.phase)->check(CLI::IsMember({"fill", "drain", "live"}));
    app.add_option("--count", s.count);
    app.add_option("--rate", s.rate);
    app.add_option("--duration", s.duration_s);
    app.add_option("--writers", s.writers);
    app.add_option("--timeout", s.timeout_s);
    app.allow_extras();  // scripts/bench passes its common flags to every driver
    CLI11_PARSE(app, argc, argv);
    try {
        if (s.phase == "fill") return fill(s);
        if (s.phase == "drain") return drain(s);
        return live(s);
    } catch (const std::exception& error) {
        std::cerr << "sql intake driver: " << error.what() << "\n";
        return 1;
    }
}
