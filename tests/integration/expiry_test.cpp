// Expiry (reference §6 "Expiry"): a job that says how late is too late (x-hourglass-expires-after)
// and would be released later than that after its due time goes to <prefix>.expired with the
// reason, not to its consumers; a job within its bound is released as usual. x-opt-delivery-time
// (RabbitMQ 4.4's delay header) schedules like x-schedule-at.
#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;

class Expiry : public HourglassTest {};

TEST_F(Expiry, a_job_too_late_for_its_expiry_goes_to_the_expired_queue_with_the_reason) {
    auto& process = start_hourglass();
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    Client expired_reader(amqp_url_);
    expired_reader.channel().consume(prefix_ + ".expired", /*no_ack=*/true);

    // Due 10 s ago (hourglass was down, say): 2 s is too late, 1 min is not.
    const auto past = std::int64_t{to_epoch_ms(now_ms() - 10s)};
    auto too_late = command("jobs.expiring", "too late");
    too_late.properties.message_id = "too-late";
    set_header(too_late.properties, "x-schedule-at", past);
    set_header(too_late.properties, "x-hourglass-expires-after", std::string("2s"));
    auto in_time = command("jobs.expiring", "in time");
    in_time.properties.message_id = "in-time";
    set_header(in_time.properties, "x-schedule-at", past);
    set_header(in_time.properties, "x-hourglass-expires-after", std::string("1m"));
    client.publish_all({too_late, in_time});

    const auto expired = expired_reader.receive(10s);
    ASSERT_TRUE(expired) << process.log_tail();
    EXPECT_EQ(string_header(expired->message, "x-hourglass-id"), "too-late");
    EXPECT_EQ(expired->message.body, "too late");
    EXPECT_EQ(expired->message.routing_key, "jobs.expiring");
    EXPECT_NE(string_header(expired->message, "x-hourglass-error").find("x-hourglass-expires-after (2000 ms)"),
              std::string::npos);
    const auto released = client.drain(2000ms, 10s);
    ASSERT_EQ(released.size(), 1u);
    EXPECT_EQ(string_header(released[0].message, "x-hourglass-id"), "in-time");
    EXPECT_EQ(header_of(released[0].message, "x-hourglass-expires-after"), nullptr);
    EXPECT_TRUE(eventually("SELECT state || ' ' || (expired_at IS NOT NULL) FROM jobs WHERE id = 'too-late'",
                           "done true"));
    EXPECT_TRUE(eventually("SELECT state || ' ' || (expired_at IS NOT NULL) FROM jobs WHERE id = 'in-time'",
                           "done false"));
    EXPECT_FALSE(expired_reader.receive(1s)) << "expired twice";
}

TEST_F(Expiry, x_opt_delivery_time_schedules_as_rabbitmq_4_4_quorum_queues_take_it) {
    start_hourglass();
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    const auto due = now_ms() + 1500ms;
    auto job = command("jobs.delivery-time", "later");
    job.properties.message_id = "delivery-time";
    set_header(job.properties, "x-opt-delivery-time", std::int64_t{to_epoch_ms(due)});
    client.publish(job);
    const auto released = client.receive(10s);
    ASSERT_TRUE(released);
    EXPECT_EQ(string_header(released->message, "x-hourglass-due"), format_rfc3339_ms(due));
    EXPECT_GE(released->received_at, due);
    EXPECT_EQ(header_of(released->message, "x-opt-delivery-time"), nullptr);
}

}  // namespace
}  // namespace hourglass::testing
