// The README's five-minute walk, with Debian's amqp-tools and psql, as a new user runs it.
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;

class TryIt : public HourglassTest {};

TEST_F(TryIt, amqp_publish_job_arrives_at_amqp_consume_at_its_due_time) {
    // amqp-tools and psql come with scripts/install-deps.
    ASSERT_NE(run_shell("which amqp-publish amqp-consume psql").output.find("psql"), std::string::npos);
    start_hourglass();
    const auto url = "'" + amqp_url_ + "'";
    const auto output_file = "/tmp/hourglass-try-it-" + prefix_ + ".out";
    // The consumer: an exclusive queue bound to the output exchange, one message, then exit.
    std::thread consumer([&] {
        const auto consume = "timeout 20 amqp-consume --url " + url + " -e " + out_exchange() +
                             " -r 'orders.#' -x -c 1 -- sh -c 'cat; echo; date +%s%3N' > " +
                             output_file + " 2>/dev/null";
        EXPECT_EQ(std::system(consume.c_str()), 0);
    });
    std::this_thread::sleep_for(1s);  // let the consumer bind its queue
    const auto published = now_ms();
    const auto publish = run_shell("amqp-publish --url " + url + " -e " + in_exchange() +
                                   " -r orders.created -H 'x-delay: 3000' -C application/json -b "
                                   "'{\"order\": 42}'");
    EXPECT_EQ(publish.exit_code, 0);
    EXPECT_EQ(publish.output, "");
    consumer.join();

    // The file holds the body, a newline, and the receive time in epoch milliseconds.
    std::string body, received_ms;
    {
        FILE* file = std::fopen(output_file.c_str(), "r");
        ASSERT_NE(file, nullptr);
        char line[256];
        if (std::fgets(line, sizeof line, file)) body = line;
        if (std::fgets(line, sizeof line, file)) received_ms = line;
        std::fclose(file);
        std::remove(output_file.c_str());
    }
    if (!body.empty() && body.back() == '\n') body.pop_back();
    ASSERT_FALSE(received_ms.empty()) << "nothing received";
    EXPECT_EQ(body, "{\"order\": 42}");
    const auto received = from_epoch_ms(std::stoll(received_ms));
    EXPECT_GE(received, published + 3000ms) << "not before its due time";
    EXPECT_LE(received, published + 4500ms);

    // `done` shows about 100 ms after the release (the audit records in batches): a person
    // typing step 3 never sees it `enqueued`, a script running it at once may, for that long.
    const auto state_query = "psql '" + pg_url_ + "' -At -c \"SELECT state FROM " + schema_ +
                             ".jobs WHERE routing_key = 'orders.created'\"";
    auto rows = run_shell(state_query);
    for (const auto deadline = now_ms() + 2s; rows.output != "done\n" && now_ms() < deadline;) {
        std::this_thread::sleep_for(50ms);
        rows = run_shell(state_query);
    }
    EXPECT_EQ(rows.output, "done\n");
}

}  // namespace
}  // namespace hourglass::testing
