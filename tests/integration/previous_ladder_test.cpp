// Upgrades across the ladders of earlier versions: a run a previous version handed over into a
// queue of its ladder is released through the old route and observed as before.
#include "integration/release_groups_fixture.hpp"
#include "store/job_store.hpp"

namespace hourglass::testing {
namespace {

// An upgrade: a run that a previous version claimed and handed over into a queue of its
// ladder, `old_queue` (TTL 2 s, dead-lettering into `old_route`), is released through the old
// route and observed as before. The caller declares the old route as that version did, with
// hourglass running with a horizon shorter than the run's 2 s (kHorizonBelowTheRun): else its
// loader may claim the run between its insert and the previous version's claim.
class PreviousLadder : public ReleaseGroups {
protected:
    static constexpr const char* kHorizonBelowTheRun = "1s";

    // with_audit_key: the second ladder copied a release to the audit by a BCC key, the first
    // copied every release.
    void hand_over_through_a_previous_ladder(Client& client, const std::string& old_queue,
                                             const std::string& old_route, bool with_audit_key) {
        auto& broker = client.channel();
        const amqp::Arguments classic{{"x-queue-type", std::string("classic")}};
        auto delay_arguments = classic;
        delay_arguments.emplace_back("x-message-ttl", std::int64_t{2000});
        delay_arguments.emplace_back("x-dead-letter-exchange", old_route);
        broker.declare_exchange(old_queue, "fanout");
        broker.declare_queue(old_queue, delay_arguments);
        broker.bind_queue(old_queue, old_queue, "");

        store::JobStore store({pg_url_, schema_});
        const auto due = std::chrono::time_point_cast<Milliseconds>(now_us()) + 2s;
        ScheduleCommand job;
        job.id = "old-ladder";
        job.routing_key = "jobs.test";
        job.due_at = due;
        job.accepted_at = due - 3s;
        const std::vector<Command> commands{Command{job, job.id, std::nullopt, std::nullopt}};
        store.apply(commands);
        ASSERT_EQ(store.claim_due("previous-version", due, 10, 60s).size(), 1u);
        Message release;
        release.exchange = old_queue;
        release.routing_key = "jobs.test";
        release.body = "body";
        release.properties.delivery_mode = 2;
        set_header(release.properties, "x-hourglass-id", std::string("old-ladder"));
        set_header(release.properties, "x-hourglass-due", format_rfc3339_ms(due));
        set_header(release.properties, "x-hourglass-run", std::int64_t{1});
        if (with_audit_key) {
            set_header(release.properties, "BCC", FieldArray{FieldValue{audit_key()}});
        }
        client.publish(release);
        store.record_handed_over("previous-version",
                                 {{"old-ladder", 1, std::nullopt, true, std::nullopt}});
        released_due_ = due;
    }

    void expect_released_once_and_observed(Client& client, const HourglassProcess& process) {
        const auto received = client.drain(3000ms, 10s);
        ASSERT_EQ(received.size(), 1u);
        EXPECT_EQ(string_header(received.front().message, "x-hourglass-id"), "old-ladder");
        EXPECT_GE(received.front().received_at, released_due_);
        EXPECT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'old-ladder'", "done", 10s))
            << process.log_tail(30);
    }

    std::string audit_key() const { return ".." + prefix_ + ".release-copied-to-the-audit.."; }

private:
    TimePoint released_due_;
};

// The first ladder: `<prefix>.delay.<ttl>` queues dead-lettering into a fanout exchange, and
// from it through `<prefix>.delay.observe` to the audit queue.
TEST_F(PreviousLadder, a_run_left_in_the_first_ladder_is_released_and_observed) {
    auto& process = start_hourglass({"--horizon", kHorizonBelowTheRun});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    auto& broker = client.channel();
    const auto old_release = prefix_ + ".delay.release";
    const auto old_observe = prefix_ + ".delay.observe";
    const auto old_audit = prefix_ + ".delay.audit";  // the same audit queue
    broker.declare_exchange(old_release, "fanout");
    broker.bind_exchange(out_exchange(), old_release, "");
    broker.declare_exchange(old_audit, "fanout");
    broker.bind_queue(old_audit, old_audit, "");
    broker.declare_exchange(old_observe, "direct", {{"alternate-exchange", old_audit}});
    broker.bind_exchange(old_observe, old_release, "");
    hand_over_through_a_previous_ladder(client, prefix_ + ".delay.2000", old_release, false);
    expect_released_once_and_observed(client, process);
}

// The second ladder (2026-11-27): `<prefix>.delay.<ttl>ms` queues dead-lettering into the topic
// exchange `<prefix>.delay.dispatch`, bound on `#` to the output and on the audit key to the
// audit queue.
TEST_F(PreviousLadder, a_run_left_in_the_topic_dispatch_ladder_is_released_and_observed) {
    auto& process = start_hourglass({"--horizon", kHorizonBelowTheRun});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    auto& broker = client.channel();
    const auto old_dispatch = prefix_ + ".delay.dispatch";
    broker.declare_exchange(old_dispatch, "topic");
    broker.bind_exchange(out_exchange(), old_dispatch, "#");
    broker.bind_queue(prefix_ + ".delay.audit", old_dispatch, audit_key());
    hand_over_through_a_previous_ladder(client, prefix_ + ".delay.2000ms", old_dispatch, true);
    expect_released_once_and_observed(client, process);
}

}  // namespace
}  // namespace hourglass::testing
