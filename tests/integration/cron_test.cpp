// Recurring jobs end to end (reference §3.1, §5): runs numbered by x-hourglass-run, limits, until,
// cancel, and runs missed while hourglass was down coalesced into one.
#include <thread>

#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;

class Cron : public HourglassTest {
protected:
    Message recurring(const std::string& id, const std::string& expression) const {
        auto message = command("cron.tick", "tick " + id);
        message.properties.message_id = id;
        set_header(message.properties, "x-cron", expression);
        return message;
    }
    static std::int64_t run_of(const Received& received) {
        const auto* value = header_of(received.message, "x-hourglass-run");
        return value ? std::get<std::int64_t>(value->value) : -1;
    }
    static TimePoint due_of(const Received& received) {
        return parse_rfc3339(string_header(received.message, "x-hourglass-due")).value_or(TimePoint{});
    }
};

TEST_F(Cron, every_two_seconds_with_limit_three_releases_runs_one_two_three_on_even_seconds) {
    start_hourglass();
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "cron.#");
    const auto replies = client.receipt_queue();
    auto job = recurring("cron-limit", "*/2 * * * * *");
    set_header(job.properties, "x-cron-limit", std::int32_t{3});
    set_header(job.properties, "x-reply-to", replies);
    const auto accepted = now_ms();
    client.publish(job);

    auto receipt = client.receive(5s);
    ASSERT_TRUE(receipt);
    // hourglass accepted the job between the publish and the receipt: the first run is the
    // next even second after that instant (a publish can straddle one).
    const auto receipt_at = now_ms();
    const auto view = parse_receipt(*receipt);
    EXPECT_EQ(view.status, "scheduled");
    ASSERT_TRUE(view.due) << "the receipt carries the first due time";
    const auto first_due = parse_rfc3339(*view.due);
    ASSERT_TRUE(first_due);
    EXPECT_GT(*first_due, accepted);
    EXPECT_LE(*first_due, receipt_at + 2s);

    const auto runs = client.drain(4000ms, 20s);
    ASSERT_EQ(runs.size(), 3u) << "exactly three runs";
    for (std::size_t i = 0; i < runs.size(); ++i) {
        EXPECT_EQ(run_of(runs[i]), static_cast<std::int64_t>(i + 1));
        const auto due = due_of(runs[i]);
        const auto since_epoch = due.time_since_epoch();
        EXPECT_EQ(since_epoch % 2000ms, 0ms) << "on an even second: " << format_rfc3339_ms(due);
        EXPECT_EQ(due, *first_due + 2s * static_cast<int>(i));
        EXPECT_GE(runs[i].received_at, due) << "never early";
        EXPECT_EQ(runs[i].message.body, "tick cron-limit");
        EXPECT_EQ(header_of(runs[i].message, "x-cron"), nullptr) << "control headers removed";
    }
    EXPECT_TRUE(eventually("SELECT state || ':' || runs FROM jobs WHERE id = 'cron-limit'", "done:3"));
}

TEST_F(Cron, until_ends_the_job_after_its_last_run) {
    start_hourglass();
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "cron.#");
    auto job = recurring("cron-until", "* * * * * *");
    const auto until = now_ms() + 3500ms;
    set_header(job.properties, "x-cron-until", format_rfc3339_ms(until));
    client.publish(job);
    const auto runs = client.drain(3000ms, 20s);
    ASSERT_GE(runs.size(), 3u);
    ASSERT_LE(runs.size(), 4u);
    for (std::size_t i = 0; i < runs.size(); ++i) {
        EXPECT_EQ(run_of(runs[i]), static_cast<std::int64_t>(i + 1));
        EXPECT_LE(due_of(runs[i]), until) << "no run after until";
    }
    EXPECT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'cron-until'", "done"));
}

TEST_F(Cron, cancel_stops_a_recurring_job_for_good) {
    start_hourglass();
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "cron.#");
    const auto replies = client.receipt_queue();
    client.publish(recurring("cron-cancel", "* * * * * *"));
    std::optional<Received> first_run;
    while ((first_run = client.receive(5s)) && run_of(*first_run) < 1) {
    }
    ASSERT_TRUE(first_run);
    client.publish(cancel_command("cron-cancel", replies));
    const auto [receipt, releases_after_cancel] = split_receipts(client.drain(4000ms, 20s));
    const auto runs_after_cancel = static_cast<int>(releases_after_cancel.size());
    ASSERT_TRUE(receipt);
    EXPECT_EQ(receipt->status, "cancelled");
    EXPECT_LE(runs_after_cancel, 1) << "at most the run already within the horizon";
    EXPECT_EQ(job_state("cron-cancel"), "cancelled");
}

TEST_F(Cron, runs_missed_while_hourglass_was_down_are_coalesced_into_one) {
    const std::vector<std::string> flags = {"--lease", "1s"};
    auto* first = &start_hourglass(flags);
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "cron.#");
    client.publish(recurring("cron-missed", "*/2 * * * * *"));
    auto run1 = client.receive(5s);
    ASSERT_TRUE(run1);
    EXPECT_EQ(run_of(*run1), 1);
    first->kill_hard();
    // Drop what the killed instance had already handed to the broker.
    client.drain(2500ms, 5s);
    std::this_thread::sleep_for(6s);  // three or more due times pass with no hourglass

    const auto restarted = now_ms();
    start_hourglass(flags);
    // The new instance takes over its dead predecessor's claim once it has itself beaten
    // without a break for 2 s (docs/architecture.md "Fencing").
    const auto after = client.drain(3000ms, 8000ms);
    ASSERT_FALSE(after.empty()) << "the missed runs were not released";
    int overdue = 0;
    for (const auto& r : after) {
        if (due_of(r) < restarted) ++overdue;
    }
    EXPECT_EQ(overdue, 1) << "missed runs are coalesced into exactly one";
    // The schedule continues from now on even seconds.
    for (const auto& r : after) {
        if (due_of(r) >= restarted) {
            EXPECT_EQ(due_of(r).time_since_epoch() % 2000ms, 0ms);
        }
    }
    const auto log = processes_.back()->log_tail(200);
    EXPECT_NE(log.find("coalesced"), std::string::npos) << "coalescing is logged";
}

TEST_F(Cron, replace_changes_the_expression_zone_and_payload_of_a_recurring_job) {
    start_hourglass({"--horizon", "2s"});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "cron.#");
    const auto replies = client.receipt_queue();
    // First every minute at second 30 in UTC, far enough not to be claimed yet...
    client.publish(recurring("cron-replace", "30 * * * * *"));
    // ... then every second in another zone with another body.
    auto replacement = recurring("cron-replace", "* * * * * *");
    replacement.body = "new payload";
    set_header(replacement.properties, "x-cron-tz", std::string("Europe/Berlin"));
    set_header(replacement.properties, "x-cron-limit", std::int32_t{2});
    set_header(replacement.properties, "x-replace", true);
    set_header(replacement.properties, "x-reply-to", replies);
    client.publish(replacement);
    const auto [receipt, runs] = split_receipts(client.drain(3000ms, 20s));
    ASSERT_TRUE(receipt);
    EXPECT_EQ(receipt->status, "replaced");
    ASSERT_EQ(runs.size(), 2u) << "the new expression and limit apply";
    for (const auto& run : runs) EXPECT_EQ(run.message.body, "new payload");
    EXPECT_EQ(sql("SELECT cron || ' ' || cron_tz FROM jobs WHERE id = 'cron-replace'")[0][0].as<std::string>(),
              "* * * * * * Europe/Berlin");
}

TEST_F(Cron, bad_cron_commands_are_rejected_with_the_field_named) {
    start_hourglass();
    Client client(amqp_url_);
    const auto replies = client.receipt_queue();
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"0 0 30 2 *", "never"},           {"61 * * * *", "minute"},
        {"* * * * FRI-MON", "day-of-week"}, {"not a cron", "x-cron"}};
    for (const auto& [expression, mentions] : bad) {
        auto job = recurring("bad-cron", expression);
        set_header(job.properties, "x-reply-to", replies);
        client.publish(job);
        auto receipt = client.receive(5s);
        ASSERT_TRUE(receipt) << expression;
        const auto view = parse_receipt(*receipt);
        EXPECT_EQ(view.status, "rejected") << expression;
        ASSERT_TRUE(view.error);
        EXPECT_NE(view.error->find(mentions), std::string::npos) << *view.error;
    }
    auto zone = recurring("bad-zone", "* * * * *");
    set_header(zone.properties, "x-cron-tz", std::string("Mars/Olympus"));
    set_header(zone.properties, "x-reply-to", replies);
    client.publish(zone);
    auto receipt = client.receive(5s);
    ASSERT_TRUE(receipt);
    EXPECT_EQ(parse_receipt(*receipt).status, "rejected");
    EXPECT_NE(parse_receipt(*receipt).error->find("x-cron-tz"), std::string::npos);
}

}  // namespace
}  // namespace hourglass::testing
