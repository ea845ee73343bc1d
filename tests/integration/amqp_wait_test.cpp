// amqp::Connection::next_event waits without burning CPU, also for less than a millisecond.
// rabbitmq-c alone rounds a wait down to whole milliseconds, so a wait under 1 ms returns at
// once; the loader's publisher waits at most 1 ms for confirms, so at 1,000 jobs/s it spun
// ~20,000 times a second (found by the benchmarks: scripts/bench, bench/journal/2026-11-22-to-12-04.md).
// Without the fix this loop makes ~100,000+ calls instead of ~440.
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>

#include "amqp/channel.hpp"
#include "amqp/connection.hpp"
#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

TEST(AmqpWait, sub_millisecond_waits_sleep_instead_of_spinning) {
    const auto url = env_or_skip("HOURGLASS_AMQP_URL");
    if (url.empty()) GTEST_SKIP() << "HOURGLASS_AMQP_URL is not set (run through scripts/test)";
    amqp::ConnectionOptions options;
    options.url = url;
    options.connection_name = "hourglass wait test";
    amqp::Connection connection(options);
    amqp::Channel channel(connection, 1);

    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = thread_cpu_seconds();
    int waits = 0;
    while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds{400}) {
        // Nothing arrives on this connection: every call waits its whole timeout.
        EXPECT_FALSE(connection.next_event(std::chrono::microseconds{900}).has_value());
        ++waits;
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double cpu = thread_cpu_seconds() - cpu_start;
    std::cout << "[sub-ms waits] " << waits << " waits of 900 us in " << wall << " s, CPU " << cpu
              << " s\n";
    // Each call waited its timeout instead of returning at once...
    EXPECT_LT(waits, 400 * 1000 / 900 + 50);
    // ...sleeping, not spinning (a loaded machine only lowers the CPU share).
    EXPECT_LT(cpu, 0.3 * wall);
}

}  // namespace
}  // namespace hourglass::testing
