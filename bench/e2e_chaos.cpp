// The load and the checker of the fault campaign (bench/chaos, `scripts/bench --only chaos`):
// publishes a steady load, hotspots and recurring jobs to hourglass.in for --duration seconds,
// receives every release on hourglass.out, and at the end writes what it saw as JSON: jobs
// accepted, lost (accepted, never released), early (released before x-hourglass-due),
// duplicates (each copy's arrival time, for the campaign to explain by a fault), the worst
// lateness, and releases per second.
//
// Its own connections go straight to the broker: the faults are injected between hourglass and
// its services, never into the load. A publish the broker did not confirm (a memory alarm
// longer than the confirm wait) counts as not accepted; if it is released anyway, it is
// counted apart, not as a fault.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "hourglass/time.hpp"
#include "support/amqp_client.hpp"

using namespace std::chrono_literals;
using hourglass::Message;
using hourglass::testing::Client;
using Micros = std::chrono::sys_time<std::chrono::microseconds>;

namespace {

struct Settings {
    std::string amqp_url;
    std::string prefix = "hourglass";
    double duration_s = 120;
    double rate = 100;              // steady jobs per second
    double hotspot_every_s = 30;    // 0: none
    std::size_t hotspot_jobs = 1000;
    std::size_t cron_jobs = 5;      // every-second recurring jobs
    double drain_s = 20;            // after the last due time
    std::string out;
};

Micros now_us() { return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now()); }

double seconds(Micros t) { return static_cast<double>(t.time_since_epoch().count()) / 1e6; }

// What was accepted (confirmed by the broker), by job id: its due time when known (one-shot).
struct Ledger {
    std::mutex mutex;
    std::map<std::string, std::optional<Micros>> accepted;
    std::set<std::string> unconfirmed;
    std::size_t cron_jobs = 0;
    Micros last_due{};
};

struct Copy {
    Micros received;
    Micros due;
};

Message schedule(const std::string& prefix, const std::string& id, const std::string& header,
                 hourglass::FieldValue value) {
    Message message;
    message.exchange = prefix + ".in";
    message.routing_key = "chaos." + id.substr(0, 1);
    message.body = id;
    message.properties.message_id = id;
    message.properties.delivery_mode = 2;
    hourglass::set_header(message.properties, header, std::move(value));
    return message;
}

// Publishes with confirms; reconnects after a failure. Returns whether the broker confirmed.
bool publish_confirmed(std::unique_ptr<Client>& client, const std::string& url, const std::vector<Message>& batch) {
    try {
        if (!client) client = std::make_unique<Client>(url);
        client->publish_all(batch);
        return true;
    } catch (const std::exception& error) {
        std::cerr << "chaos driver: publish failed (" << error.what() << "); reconnecting\n";
        client.reset();
        return false;
    }
}

void publish_load(const Settings& s, Ledger& ledger) {
    std::unique_ptr<Client> client;
    std::mt19937 random(42);
    std::uniform_int_distribution<int> delay_ms(1000, 8000);
    const auto start = std::chrono::steady_clock::now();
    const auto end = start + std::chrono::duration<double>(s.duration_s);
    std::size_t steady = 0, hotspots = 0;
    auto next_hotspot = start + std::chrono::duration<double>(std::min(10.0, s.hotspot_every_s));
    const auto record = [&](const std::vector<Message>& batch, const std::vector<std::optional<Micros>>& dues, bool ok) {
        std::lock_guard lock(ledger.mutex);
        for (std::size_t i = 0; i < batch.size(); ++i) {
            const auto& id = *batch[i].properties.message_id;
            if (ok) {
                ledger.accepted[id] = dues[i];
                if (dues[i]) ledger.last_due = std::max(ledger.last_due, *dues[i]);
            } else {
                ledger.unconfirmed.insert(id);
            }
        }
    };
    {
        std::vector<Message> crons;
        std::vector<std::optional<Micros>> dues;
        for (std::size_t i = 0; i < s.cron_jobs; ++i) {
            crons.push_back(schedule(s.prefix, "cron-" + std::to_string(i), "x-cron", std::string("* * * * * *")));
            dues.push_back(std::nullopt);
        }
        record(crons, dues, publish_confirmed(client, s.amqp_url, crons));
        std::lock_guard lock(ledger.mutex);
        ledger.cron_jobs = s.cron_jobs;
    }
    for (auto tick = start; tick < end; tick += 100ms) {
        std::this_thread::sleep_until(tick);
        std::vector<Message> batch;
        std::vector<std::optional<Micros>> dues;
        const auto per_tick = static_cast<std::size_t>(s.rate / 10);
        for (std::size_t i = 0; i < per_tick; ++i) {
            const auto delay = delay_ms(random);
            batch.push_back(schedule(s.prefix, "steady-" + std::to_string(steady++), "x-delay", std::int64_t{delay}));
            dues.push_back(now_us() + std::chrono::milliseconds{delay});
        }
        if (s.hotspot_every_s > 0 && std::chrono::steady_clock::now() >= next_hotspot) {
            next_hotspot += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                std::chrono::duration<double>(s.hotspot_every_s));
            const auto instant = std::chrono::time_point_cast<hourglass::Milliseconds>(now_us() + 6s);
            for (std::size_t i = 0; i < s.hotspot_jobs; ++i) {
                batch.push_back(schedule(s.prefix, "hotspot-" + std::to_string(hotspots) + "-" + std::to_string(i),
                                         "x-schedule-at", std::int64_t{hourglass::to_epoch_ms(instant)}));
                dues.push_back(Micros{instant});
            }
            ++hotspots;
        }
        record(batch, dues, publish_confirmed(client, s.amqp_url, batch));
    }
    // The recurring jobs stop for good (their runs within the horizon are still released).
    std::vector<Message> cancels;
    for (std::size_t i = 0; i < s.cron_jobs; ++i) {
        auto cancel = schedule(s.prefix, "cron-" + std::to_string(i), "x-cancel", true);
        cancels.push_back(std::move(cancel));
    }
    for (int attempt = 0; attempt < 10 && !publish_confirmed(client, s.amqp_url, cancels); ++attempt) {
        std::this_thread::sleep_for(1s);
    }
}

// Every copy received, by job and run, with what it says of lateness and earliness.
struct Releases {
    std::map<std::pair<std::string, int>, std::vector<Copy>> copies;
    std::map<long, std::size_t> per_second;
    std::size_t early = 0;
    std::vector<std::string> early_ids;

    void record(const hourglass::testing::Received& r) {
        const auto id = hourglass::testing::string_header(r.message, "x-hourglass-id");
        int run = 0;
        if (const auto* value = hourglass::testing::header_of(r.message, "x-hourglass-run")) {
            if (const auto* number = std::get_if<std::int64_t>(&value->value)) run = static_cast<int>(*number);
        }
        const auto due_ms = hourglass::parse_rfc3339(hourglass::testing::string_header(r.message, "x-hourglass-due"));
        const Micros due = due_ms ? Micros{*due_ms} : r.received_at_us;
        if (r.received_at_us < due) {
            ++early;
            if (early_ids.size() < 20) early_ids.push_back(id);
        }
        copies[{id, run}].push_back({r.received_at_us, due});
        ++per_second[static_cast<long>(seconds(r.received_at_us))];
    }
    std::size_t count() const {
        std::size_t n = 0;
        for (const auto& [key, list] : copies) n += list.size();
        return n;
    }
};

// Receives releases until the load ended, the last due time is --drain past, and nothing came
// for 5 s.
void receive_until_drained(const Settings& s, Ledger& ledger, Client& receiver,
                           const std::atomic<bool>& publishing, Releases& releases) {
    auto quiet_since = std::chrono::steady_clock::now();
    while (true) {
        if (auto r = receiver.receive(200ms)) {
            quiet_since = std::chrono::steady_clock::now();
            releases.record(*r);
            continue;
        }
        if (publishing) continue;
        Micros last_due;
        {
            std::lock_guard lock(ledger.mutex);
            last_due = ledger.last_due;
        }
        const bool past_due = now_us() > last_due + std::chrono::duration_cast<std::chrono::microseconds>(
                                                        std::chrono::duration<double>(s.drain_s));
        if (past_due && std::chrono::steady_clock::now() - quiet_since > 5s) return;
    }
}

// The result the campaign reads (bench/chaos/report.py).
nlohmann::json result(const Ledger& ledger, const Releases& releases) {
    std::set<std::string> released;
    double worst_late_ms = 0;
    nlohmann::json duplicates = nlohmann::json::array();
    std::size_t unconfirmed_released = 0;
    for (const auto& [key, list] : releases.copies) {
        released.insert(key.first);
        worst_late_ms = std::max(worst_late_ms, std::chrono::duration<double, std::milli>(list.front().received - list.front().due).count());
        if (ledger.unconfirmed.contains(key.first)) ++unconfirmed_released;
        if (list.size() > 1) {
            nlohmann::json times = nlohmann::json::array();
            for (const auto& copy : list) times.push_back(seconds(copy.received));
            duplicates.push_back({{"id", key.first}, {"run", key.second}, {"due", seconds(list.front().due)}, {"received", times}});
        }
    }
    nlohmann::json lost = nlohmann::json::array();
    std::size_t lost_count = 0;
    for (const auto& [id, due] : ledger.accepted) {
        if (released.contains(id)) continue;
        ++lost_count;
        if (lost.size() < 50) lost.push_back({{"id", id}, {"due", due ? seconds(*due) : 0.0}});
    }
    nlohmann::json series = nlohmann::json::array();
    for (const auto& [second, count] : releases.per_second) series.push_back({second, count});
    return {{"accepted", ledger.accepted.size()},
            {"cron_jobs", ledger.cron_jobs},
            {"unconfirmed_publishes", ledger.unconfirmed.size()},
            {"unconfirmed_released", unconfirmed_released},
            {"releases", releases.count()},
            {"lost", lost_count},
            {"lost_ids", lost},
            {"early", releases.early},
            {"early_ids", releases.early_ids},
            {"duplicates", duplicates},
            {"worst_lateness_ms", worst_late_ms},
            {"per_second", series}};
}

}  // namespace

int main(int argc, char** argv) {
    Settings s;
    CLI::App app{"hourglass fault campaign: load and checker"};
    app.add_option("--amqp-url", s.amqp_url)->envname("HOURGLASS_AMQP_URL")->required();
    app.add_option("--prefix", s.prefix);
    app.add_option("--duration", s.duration_s, "seconds of publishing");
    app.add_option("--rate", s.rate, "steady jobs per second (due 1-8 s after they are sent)");
    app.add_option("--hotspot-every", s.hotspot_every_s, "seconds between hotspots (0: none)");
    app.add_option("--hotspot-jobs", s.hotspot_jobs, "jobs due at the instant of each hotspot");
    app.add_option("--cron-jobs", s.cron_jobs, "recurring jobs that fire every second");
    app.add_option("--drain", s.drain_s, "seconds to wait for releases after the last due time");
    app.add_option("--out", s.out, "JSON result file")->required();
    CLI11_PARSE(app, argc, argv);

    Ledger ledger;
    Releases releases;
    Client receiver(s.amqp_url);
    receiver.subscribe(s.prefix + ".out", "#");
    std::atomic<bool> publishing{true};
    std::thread publisher([&] {
        publish_load(s, ledger);
        publishing = false;
    });
    receive_until_drained(s, ledger, receiver, publishing, releases);
    publisher.join();
    const auto out = result(ledger, releases);
    std::ofstream(s.out) << out.dump() << "\n";
    std::cout << "chaos driver: accepted " << ledger.accepted.size() << ", lost " << out["lost"] << ", early "
              << releases.early << ", duplicates " << out["duplicates"].size() << ", worst lateness "
              << out["worst_lateness_ms"] << " ms\n";
    return 0;
}
