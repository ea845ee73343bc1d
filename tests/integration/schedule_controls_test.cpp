// Schedule controls end to end (reference §3.3, §5 "Missed runs"): pause and resume a recurring
// job, what its missed runs become under each x-cron-catchup, and cancel by routing-key prefix.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <thread>
#include <utility>

#include "integration/harness.hpp"
#include "store/job_store.hpp"
#include "store/migrations.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;

class ScheduleControls : public HourglassTest {
protected:
    Message every_second(const std::string& id, const std::string& catchup = "") const {
        auto message = command("controls.tick", "tick " + id);
        message.properties.message_id = id;
        set_header(message.properties, "x-cron", std::string("* * * * * *"));
        if (!catchup.empty()) set_header(message.properties, "x-cron-catchup", catchup);
        return message;
    }
    Message control(const std::string& header, const std::string& id, const std::string& replies) const {
        auto message = command("controls.control", "");
        message.properties.message_id = id;
        set_header(message.properties, header, true);
        set_header(message.properties, "x-reply-to", replies);
        return message;
    }
    static std::int64_t catchup_of(const Received& received) {
        const auto* value = header_of(received.message, "x-hourglass-catchup");
        return value ? std::get<std::int64_t>(value->value) : 0;
    }
    static TimePoint due_of(const Received& received) {
        return parse_rfc3339(string_header(received.message, "x-hourglass-due")).value_or(TimePoint{});
    }
    static std::vector<Received> of_job(const std::vector<Received>& received, const std::string& id) {
        std::vector<Received> runs;
        for (const auto& r : received) {
            if (string_header(r.message, "x-hourglass-id") == id) runs.push_back(r);
        }
        return runs;
    }
    // Sends a control command and returns its receipt's status. Releases that arrive before
    // the receipt are kept for the next drain.
    std::string send(Client& client, const std::string& replies, const Message& message) {
        client.publish(message);
        for (auto received = client.receive(10s); received; received = client.receive(10s)) {
            if (received->message.routing_key == replies) return parse_receipt(*received).status;
            kept_.push_back(std::move(*received));
        }
        return "<no receipt>";
    }
    // What arrived before the last receipt, then everything within `quiet` of the last message.
    std::vector<Received> drain(Client& client, std::chrono::milliseconds quiet,
                                std::chrono::milliseconds total) {
        auto received = std::exchange(kept_, {});
        for (auto& r : client.drain(quiet, total)) received.push_back(std::move(r));
        return received;
    }
    std::vector<Received> kept_;
};

// Paused, a job releases nothing; resumed, the runs it missed meanwhile come out as one run
// (the default, x-cron-catchup: one) marked with how many it stands for, then it goes on.
TEST_F(ScheduleControls, a_paused_job_releases_nothing_and_resumed_releases_one_run_for_the_missed) {
    start_hourglass({"--horizon", "2s"});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "controls.#");
    const auto replies = client.receipt_queue();
    client.publish(every_second("ctl-pause"));
    ASSERT_TRUE(client.receive(10s)) << "the job runs before it is paused";

    ASSERT_EQ(send(client, replies, control("x-pause", "ctl-pause", replies)), "paused");
    EXPECT_EQ(job_state("ctl-pause"), "paused");
    drain(client, 3000ms, 6s);  // the runs already handed over (within the 2 s horizon)
    const auto while_paused = drain(client, 4000ms, 4500ms);
    EXPECT_TRUE(while_paused.empty()) << while_paused.size() << " releases while paused";
    EXPECT_EQ(sql("SELECT paused FROM stats")[0][0].as<int>(), 1);

    const auto resumed_at = now_ms();
    ASSERT_EQ(send(client, replies, control("x-resume", "ctl-pause", replies)), "resumed");
    const auto after = of_job(drain(client, 2500ms, 8s), "ctl-pause");
    ASSERT_GE(after.size(), 2u);
    EXPECT_LT(due_of(after[0]), resumed_at - 3s) << "the first run missed";
    EXPECT_GE(catchup_of(after[0]), 4) << "it stands for the runs missed while paused";
    int missed = 0;
    for (const auto& run : after) {
        if (due_of(run) < resumed_at - 1s) ++missed;
        if (&run != &after[0]) {
            EXPECT_EQ(catchup_of(run), 0) << "later runs are not marked";
        }
    }
    EXPECT_EQ(missed, 1) << "the missed runs were coalesced into one";
    EXPECT_EQ(job_state("ctl-pause"), "pending");
}

// all: each missed run, in order, marked; skip: none released, the first goes to
// <prefix>.expired with the reason.
TEST_F(ScheduleControls, catchup_all_releases_each_missed_run_and_skip_releases_none) {
    start_hourglass({"--horizon", "2s"});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "controls.#");
    const auto replies = client.receipt_queue();
    Client expired_reader(amqp_url_);
    expired_reader.channel().consume(prefix_ + ".expired", /*no_ack=*/true);
    client.publish_all({every_second("ctl-all", "all"), every_second("ctl-skip", "skip")});
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs WHERE runs > 0", "2"));
    ASSERT_EQ(send(client, replies, control("x-pause", "ctl-all", replies)), "paused");
    ASSERT_EQ(send(client, replies, control("x-pause", "ctl-skip", replies)), "paused");
    drain(client, 3000ms, 6s);
    std::this_thread::sleep_for(4s);  // four or more runs of each missed

    const auto resumed_at = now_ms();
    ASSERT_EQ(send(client, replies, control("x-resume", "ctl-all", replies)), "resumed");
    ASSERT_EQ(send(client, replies, control("x-resume", "ctl-skip", replies)), "resumed");
    const auto received = drain(client, 2500ms, 12s);

    const auto all = of_job(received, "ctl-all");
    std::vector<Received> all_missed;
    for (const auto& run : all) {
        if (catchup_of(run) > 0) all_missed.push_back(run);
    }
    ASSERT_GE(all_missed.size(), 4u) << "each missed run is released";
    for (std::size_t i = 1; i < all_missed.size(); ++i) {
        EXPECT_EQ(due_of(all_missed[i]), due_of(all_missed[i - 1]) + 1s) << "one per missed second";
        EXPECT_EQ(catchup_of(all_missed[i]), 1);
    }
    // A per-second schedule catches up one run per claim while new runs come due: those are
    // missed too until it has caught up, and marked as such.
    EXPECT_LT(due_of(all_missed.front()), resumed_at - 3s) << "starting from the first missed";

    for (const auto& run : of_job(received, "ctl-skip")) {
        EXPECT_GE(due_of(run), resumed_at - 1s) << "a missed run of a skip job was released";
        EXPECT_EQ(catchup_of(run), 0);
    }
    const auto skipped = expired_reader.receive(5s);
    ASSERT_TRUE(skipped) << "the skipped run goes to the expired queue";
    EXPECT_EQ(string_header(skipped->message, "x-hourglass-id"), "ctl-skip");
    EXPECT_NE(string_header(skipped->message, "x-hourglass-error").find("x-cron-catchup is skip"),
              std::string::npos)
        << string_header(skipped->message, "x-hourglass-error");
    EXPECT_FALSE(expired_reader.receive(1500ms)) << "the other missed runs fold into that one";
}

TEST_F(ScheduleControls, pause_and_resume_answer_for_one_shot_ended_and_unknown_jobs) {
    start_hourglass();
    Client client(amqp_url_);
    const auto replies = client.receipt_queue();
    client.publish(delayed("ctl-once", 600000));
    ASSERT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'ctl-once'", "pending"));
    EXPECT_EQ(send(client, replies, control("x-pause", "ctl-once", replies)), "rejected");
    EXPECT_EQ(job_state("ctl-once"), "pending");
    EXPECT_EQ(send(client, replies, control("x-resume", "ctl-nobody", replies)), "not_found");
    auto yearly = command("controls.yearly");
    yearly.properties.message_id = "ctl-yearly";
    set_header(yearly.properties, "x-cron", std::string("0 0 1 1 *"));
    client.publish(yearly);
    ASSERT_EQ(send(client, replies, control("x-pause", "ctl-yearly", replies)), "paused");
    EXPECT_EQ(send(client, replies, control("x-pause", "ctl-yearly", replies)), "paused");
    EXPECT_EQ(send(client, replies, control("x-cancel", "ctl-yearly", replies)), "cancelled");
    EXPECT_EQ(send(client, replies, control("x-resume", "ctl-yearly", replies)), "too_late");
    EXPECT_EQ(job_state("ctl-yearly"), "cancelled");
}

// 2,500 jobs of one prefix (1,500 sharing one routing key, so batches must resume inside a run
// of equal keys) plus a paused cron job of it; neighbours that merely look alike stay.
TEST_F(ScheduleControls, cancel_by_prefix_cancels_every_pending_job_of_the_prefix_and_counts_them) {
    start_hourglass();
    Client client(amqp_url_);
    const auto replies = client.receipt_queue();
    std::vector<Message> jobs;
    for (int i = 0; i < 2500; ++i) {
        jobs.push_back(delayed("tenant-a-" + std::to_string(i), 3600000,
                               i < 1500 ? "tenant.a.same" : "tenant.a.k" + std::to_string(i)));
    }
    for (int i = 0; i < 10; ++i) jobs.push_back(delayed("tenant-b-" + std::to_string(i), 3600000, "tenant.b.x"));
    jobs.push_back(delayed("tenant-ab", 3600000, "tenant.ab"));
    auto cron = command("tenant.a.cron");
    cron.properties.message_id = "tenant-a-cron";
    set_header(cron.properties, "x-cron", std::string("0 0 1 1 *"));
    jobs.push_back(cron);
    client.publish_all(jobs);
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs", "2512", 30s));
    ASSERT_EQ(send(client, replies, control("x-pause", "tenant-a-cron", replies)), "paused");

    auto by_prefix = command("controls.control", "");
    set_header(by_prefix.properties, "x-cancel-prefix", std::string("tenant.a."));
    set_header(by_prefix.properties, "x-reply-to", replies);
    client.publish(by_prefix);
    const auto receipt = client.receive(30s);
    ASSERT_TRUE(receipt);
    const auto body = nlohmann::json::parse(receipt->message.body);
    EXPECT_EQ(body["status"], "cancelled");
    EXPECT_EQ(body["count"], 2501) << receipt->message.body;
    EXPECT_EQ(sql("SELECT count(*) FROM jobs WHERE state = 'cancelled'")[0][0].as<int>(), 2501);
    EXPECT_EQ(sql("SELECT count(*) FROM jobs WHERE state = 'pending'")[0][0].as<int>(), 11)
        << "tenant.b.* and tenant.ab stay";

    client.publish(by_prefix);
    const auto again = client.receive(30s);
    ASSERT_TRUE(again);
    EXPECT_EQ(nlohmann::json::parse(again->message.body)["count"], 0) << "nothing is cancelled twice";
}

// x-replace of a paused (or cancelled) recurring job whose run is in flight: the replace cleared
// the lease, the in-flight run's record then changed nothing, and the new job's first run
// took the same number, so a consumer deduplicating on x-hourglass-id + x-hourglass-run
// dropped it. The late release of the old run also moved released_at back.
TEST_F(ScheduleControls, a_replace_with_a_run_in_flight_never_reuses_its_number) {
    store::migrate(*db_, schema_, false);
    store::JobStore store({pg_url_, schema_});
    const auto due = std::chrono::time_point_cast<Milliseconds>(now_us()) + 200ms;
    ScheduleCommand job;
    job.id = "replaced";
    job.routing_key = "jobs.test";
    job.due_at = due;
    job.accepted_at = due - 1s;
    job.cron = CronSpec{"* * * * *", "UTC", {}, {}};
    store.apply(std::vector<Command>{Command{job, job.id, std::nullopt, std::nullopt}});
    auto claimed = store.claim_due("loader", due + 1s, 10, 60s);
    ASSERT_EQ(claimed.size(), 1u);
    EXPECT_EQ(claimed[0].run, 1);
    // Run 1 is published, not yet recorded; the job is paused, then replaced.
    store.apply(std::vector<Command>{Command{PauseCommand{job.id, true}, job.id, std::nullopt, std::nullopt}});
    job.replace = true;
    job.body = "the new job";
    const auto outcomes = store.apply(std::vector<Command>{Command{job, job.id, std::nullopt, std::nullopt}});
    ASSERT_EQ(outcomes.size(), 1u);
    ASSERT_EQ(outcomes[0].status, CommandStatus::replaced);
    claimed = store.claim_due("loader", due + 1s, 10, 60s);
    ASSERT_EQ(claimed.size(), 1u);
    EXPECT_EQ(claimed[0].body, "the new job");
    EXPECT_EQ(claimed[0].run, 2) << "the run in flight's number, reused";

    // Run 2 is released, then the release of run 1 is observed late.
    const auto at = std::chrono::time_point_cast<std::chrono::microseconds>(due);
    store.record_releases({{job.id, 2, due, at + 60ms}});
    store.record_releases({{job.id, 1, due, at + 20ms}});
    EXPECT_EQ(sql("SELECT floor(extract(epoch FROM released_at - '" + format_rfc3339_ms(due) +
                  "'::timestamptz) * 1000)::int FROM jobs WHERE id = 'replaced'")[0][0].as<int>(),
              60) << "released_at moved back to an earlier run's release";
}

}  // namespace
}  // namespace hourglass::testing
