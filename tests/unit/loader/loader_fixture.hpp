// The loader's test fixture (its tests: tests/unit/loader/loader*_test.cpp): the loader with
// a fake store and a fake broker channel (its seams, loader.hpp), running in its own thread
// until the fixture ends or stop(), in milliseconds and without services.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "loader/loader.hpp"
#include "support/fake_claim_store.hpp"
#include "support/fake_release_channel.hpp"
#include "support/prometheus_text.hpp"

namespace hourglass::loader::loader_tests {

namespace prometheus = hourglass::testing::prometheus;
using namespace std::chrono_literals;
using Micros = std::chrono::sys_time<std::chrono::microseconds>;

// Waits until `condition` holds (true) or `timeout` passes (false).
template <typename Condition>
inline bool eventually(Condition condition, std::chrono::milliseconds timeout = 3s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (condition()) return true;
        std::this_thread::sleep_for(5ms);
    }
    return condition();
}

using testing::FakeDatabase;
using testing::FakeStore;
using testing::FakeBroker;
using testing::FakeChannel;

// A loader over the fakes, running in its own thread until the fixture ends or stop().
class LoaderTest : public ::testing::Test {
protected:
    LoaderOptions options() {
        LoaderOptions options;
        options.horizon = 2s;
        options.poll_interval = 20ms;
        options.owner = "instance-a";
        options.lease_timings = {.heartbeat_every = 20ms,
                                 .publish_grace = 150ms,
                                 .takeover_after = 300ms,
                                 .orphan_age = 300ms,
                                 .reconcile_every = 50ms};
        return options;
    }
    void start(LoaderOptions loader_options, NextRunFunction next_run = {}) {
        LoaderSeams seams;
        seams.open_store = [this](const store::StoreOptions&) { return std::make_unique<FakeStore>(db); };
        seams.open_channel = [this] {
            {
                std::lock_guard lock(broker.mutex);
                ++broker.channels_opened;
            }
            return std::make_unique<FakeChannel>(broker, [this] { return clock(); });
        };
        seams.now = [this] { return clock(); };
        seams.declare_forward_ladder = [this] {
            std::unique_lock lock(broker.mutex);
            ++broker.forward_ladder_declarations;
            broker.forward_ladder_unstalled.wait(lock,
                                                 [&] { return !broker.forward_ladder_stalls; });
            if (broker.forward_ladder_failures > 0) {
                --broker.forward_ladder_failures;
                throw std::runtime_error("fake broker: connection refused");
            }
            broker.forward_ladder_exists = true;
        };
        // Real-time scheduling is asked for, never granted to a unit test's thread.
        seams.make_publisher_realtime = [this] {
            std::ifstream comm("/proc/thread-self/comm");
            std::string thread_name;
            std::getline(comm, thread_name);
            std::lock_guard lock(realtime_mutex);
            realtime_asked_by.push_back(thread_name);
            return realtime_answer;
        };
        metrics = loader_options.metrics;
        ladder.emplace(delay::DelayLadder::for_horizon(loader_options.horizon));
        names = loader_options.topology.names;
        lanes = loader_options.topology.delay_lanes;
        loader.emplace(std::move(loader_options), std::move(next_run), std::move(seams));
        thread = std::jthread([this](std::stop_token stop) { loader->run(stop); });
    }
    void stop() {
        thread.request_stop();
        if (thread.joinable()) thread.join();
    }
    void TearDown() override {
        db.open_claims();
        broker.unstall_forward_ladder();
        stop();
    }

    // The one clock, which the test may set ahead of the host's, or make step back 1 ms at
    // every other reading, as a heartbeat re-measuring PostgreSQL's clock may at any moment.
    Micros clock() const {
        const auto now = now_us() + offset.load();
        if (clock_steps_back && ++clock_readings % 2 == 0) return now - 1ms;
        return now;
    }
    TimePoint in(Milliseconds delay) const {
        return std::chrono::time_point_cast<Milliseconds>(clock()) + delay;
    }
    // When RabbitMQ would release a publish: its time plus the TTL of the queue it went to.
    Micros released_at(const FakeBroker::Published& publish) const {
        for (const auto ttl : ladder->ttls()) {
            for (unsigned lane = 0; lane < lanes; ++lane) {
                if (publish.message.exchange == names.delay(ttl, lane)) return publish.at + ttl;
            }
        }
        ADD_FAILURE() << "published to " << publish.message.exchange << ", not a delay queue";
        return publish.at;
    }

    // 30 runs due in 1.5 s, each shaped by `shape` to take about 4 KB; the loader may hold
    // 20,000 bytes: never more than 6 at once (5 fill the bound, a claim may take one more).
    void expect_held_within_the_byte_bound(const std::function<void(ClaimedRun&)>& shape,
                                               LoaderOptions limited) {
        for (int i = 0; i < 30; ++i) {
            ClaimedRun run;
            run.id = "job-" + std::to_string(100 + i);
            run.routing_key = "rk";
            run.due_at = in(1500ms);
            shape(run);
            db.add(std::move(run));
        }
        limited.max_in_memory_bytes = 20000;
        start(std::move(limited));
        ASSERT_TRUE(eventually([&] { return loader->in_memory_runs() >= 5; }));
        std::this_thread::sleep_for(200ms);
        EXPECT_LE(loader->in_memory_runs(), 6u);
        EXPECT_TRUE(eventually([&] { return db.handed_over() == 30; }));
    }

    // The loader's series, rendered and parsed.
    double metric(const std::string& name) const {
        return prometheus::parse(metrics->registry().render_prometheus()).value(name);
    }
    std::vector<std::string> realtime_requests() {
        std::lock_guard lock(realtime_mutex);
        return realtime_asked_by;
    }

    FakeDatabase db;
    FakeBroker broker;
    std::shared_ptr<metrics::ServiceMetrics> metrics;
    std::mutex realtime_mutex;
    int realtime_answer = EPERM;                  // what make_publisher_realtime returns
    std::vector<std::string> realtime_asked_by;  // the names of the threads that asked
    std::atomic<std::chrono::microseconds> offset{std::chrono::microseconds{0}};
    std::atomic<bool> clock_steps_back{false};
    mutable std::atomic<std::uint64_t> clock_readings{0};
    std::optional<delay::DelayLadder> ladder;
    delay::TopologyNames names;
    unsigned lanes = 1;
    std::optional<Loader> loader;
    std::jthread thread;
};

inline std::string header_text(const Message& message, std::string_view name) {
    const auto* value = find_header(message.properties, name);
    if (value == nullptr) return {};
    const auto* text = std::get_if<std::string>(&value->value);
    return text != nullptr ? *text : std::string{};
}

// The routing keys a publish asks RabbitMQ to add in BCC (none without the header).
inline std::vector<std::string> bcc_keys(const Message& message) {
    std::vector<std::string> keys;
    if (const auto* bcc = find_header(message.properties, "BCC")) {
        for (const auto& key : std::get<FieldArray>(bcc->value)) {
            keys.push_back(std::get<std::string>(key.value));
        }
    }
    return keys;
}

}  // namespace hourglass::loader::loader_tests
