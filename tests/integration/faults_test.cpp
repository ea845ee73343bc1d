// Faults beyond a plain restart (issue: nothing lost under faults): hourglass killed while the
// audit records releases, a broker resource alarm that blocks every publisher (also for longer
// than --resend-after), a paused broker (also one slow to confirm hand-overs), and a job's row
// kept locked by another transaction.
#include <gmock/gmock.h>

#include <csignal>
#include <fstream>
#include <thread>

#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;

class Faults : public HourglassTest {};

// The broker stopped (SIGSTOP, as a paused VM or a long garbage collection stops it) while in
// scope, and continued when it ends, whatever the test asserted meanwhile.
class BrokerPause {
public:
    BrokerPause() : pid_(broker_pid()) {
        if (pid_ > 0) ::kill(pid_, SIGSTOP);
    }
    ~BrokerPause() {
        if (pid_ > 0) ::kill(pid_, SIGCONT);
    }
    BrokerPause(const BrokerPause&) = delete;
    BrokerPause& operator=(const BrokerPause&) = delete;
    bool paused() const { return pid_ > 0; }

private:
    static pid_t broker_pid() {
        std::ifstream in(env_or_skip("HOURGLASS_SERVICES_DIR") + "/rabbitmq/beam.pid");
        pid_t pid = 0;
        in >> pid;
        return pid;
    }
    pid_t pid_;
};

TEST_F(Faults, kill_during_audit_updates_loses_no_release_record) {
    // A short lease: runs the killed instance had claimed are taken over quickly.
    const std::vector<std::string> flags = {"--lease", "2s"};
    auto* first = &start_hourglass(flags);
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    constexpr int kJobs = 3000;
    std::vector<Message> jobs;
    // Due one a millisecond from 1.5 s on: releases (and their records) go on for 3 s, so the
    // kill at the first record comes while most are still to be recorded. (All due at one
    // instant, the audit recorded them all at once, sometimes before the test saw the first.)
    for (int i = 0; i < kJobs; ++i) jobs.push_back(delayed("audit-" + std::to_string(i), 1500 + i));
    client.publish_all(jobs);
    ASSERT_TRUE(eventually("SELECT (count(*) > 0)::text FROM jobs WHERE state = 'done'", "true", 20s));
    first->kill_hard();
    const auto done_at_kill = sql("SELECT count(*) FROM jobs WHERE state = 'done'")[0][0].as<int>();
    start_hourglass(flags);

    std::map<std::string, int> seen;
    for (const auto& r : client.drain(4000ms, 60s)) ++seen[string_header(r.message, "x-hourglass-id")];
    std::cout << "[kill during audit] done at kill " << done_at_kill << " of " << kJobs
              << ", released " << seen.size() << " distinct\n";
    EXPECT_LT(done_at_kill, kJobs) << "the kill came too late to test anything";
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(kJobs));
    // Unacked audit copies are redelivered to the new instance: every job ends done.
    EXPECT_TRUE(eventually("SELECT count(*) FROM jobs WHERE state = 'done'", std::to_string(kJobs), 30s));
}

TEST_F(Faults, broker_memory_alarm_blocks_publishing_and_hourglass_waits_with_bounded_memory) {
    auto& process = start_hourglass({"--horizon", "5s"});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    constexpr int kJobs = 500;
    std::vector<Message> jobs;
    for (int i = 0; i < kJobs; ++i) jobs.push_back(delayed("alarm-" + std::to_string(i), 3000 + i));
    client.publish_all(jobs);
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs", std::to_string(kJobs)));

    // A memory alarm blocks every publishing connection, hourglass's loader included.
    services("rabbitmqctl", "set_vm_memory_high_watermark absolute 1");
    std::this_thread::sleep_for(6s);
    EXPECT_TRUE(process.running()) << "hourglass must wait, not fail";
    const auto resident = process.resident_bytes();
    EXPECT_LT(resident, 100u << 20) << "memory stays bounded while blocked";
    services("rabbitmqctl", "set_vm_memory_high_watermark 0.4");

    std::map<std::string, int> seen;
    for (const auto& r : client.drain(4000ms, 60s)) ++seen[string_header(r.message, "x-hourglass-id")];
    std::cout << "[memory alarm] RSS while blocked " << resident / 1024 << " KiB, released "
              << seen.size() << " of " << kJobs << "\n";
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(kJobs));
    EXPECT_TRUE(process.running());
}

// A memory alarm longer than --resend-after (a broker short of memory for a minute) across
// the instant of a burst the instances hold: the publishes wait in the blocked connections,
// and once the alarm ends the broker confirms and releases them at once. Counting the alarm
// as time the audit observed took those runs, handed over at their instant, for lost before
// their copies were recorded: two instances released 2,000 runs 2,949 times (and 5,034 in
// another run). While no release probe comes back, no run counts as lost, and the count starts
// again when one does (loader::ResendRule).
TEST_F(Faults, a_memory_alarm_longer_than_resend_after_releases_each_run_once) {
    const std::vector<std::string> flags = {"--horizon", "5s", "--resend-after", "20s"};
    auto& first = start_hourglass(flags);
    auto& second = start_hourglass(flags);
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    constexpr int kJobs = 2000;
    const auto due = now_ms() + 12s;
    client.publish_all(scheduled_series("alarm-", kJobs, due));
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs WHERE lease_owner IS NOT NULL",
                           std::to_string(kJobs), 11s))
        << "held by the instances before the alarm";
    services("rabbitmqctl", "set_vm_memory_high_watermark absolute 1");
    ASSERT_LT(now_ms(), due) << "the alarm began after the instant: nothing to test";
    std::this_thread::sleep_until(due + 45s);  // more than twice --resend-after
    const auto alarm_end = now_ms();
    services("rabbitmqctl", "set_vm_memory_high_watermark 0.4");

    std::map<std::string, int> seen;
    int copies = 0, during = 0;
    for (const auto& r : client.drain(5000ms, 90s)) {
        ++seen[string_header(r.message, "x-hourglass-id")];
        ++copies;
        if (r.received_at < alarm_end) ++during;
    }
    std::cout << "[alarm longer than resend-after] " << kJobs << " jobs, " << seen.size()
              << " released, " << copies << " copies, " << during << " during the alarm\n";
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(kJobs));
    EXPECT_EQ(copies, kJobs) << first.log_tail(20) << second.log_tail(20);
    EXPECT_TRUE(eventually("SELECT count(*) FROM jobs WHERE state = 'done'", std::to_string(kJobs), 30s));
}

// The broker paused for longer than --resend-after while runs wait in its delay queues: nothing
// is released meanwhile, but the connections stay open (their heartbeats are not yet missed).
// Counting the pause as time the audit observed took the runs for lost and wrote them again
// into the paused broker's sockets, which released originals and re-sends once it continued.
TEST_F(Faults, a_broker_paused_longer_than_resend_after_releases_each_run_once) {
    auto& process = start_hourglass({"--horizon", "5s", "--resend-after", "8s"});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    constexpr int kJobs = 500;
    const auto due = now_ms() + 9s;
    client.publish_all(scheduled_series("paused-", kJobs, due, 2ms));  // over 1 s: no burst
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs WHERE state = 'enqueued'",
                           std::to_string(kJobs), 8s))
        << "in the delay queues before the pause";
    std::this_thread::sleep_until(due - 500ms);
    {
        BrokerPause pause;
        ASSERT_TRUE(pause.paused());
        std::this_thread::sleep_for(22s);  // the runs are due 8 s into it
    }
    std::map<std::string, int> seen;
    int copies = 0;
    for (const auto& r : client.drain(5000ms, 60s)) {
        ++seen[string_header(r.message, "x-hourglass-id")];
        ++copies;
    }
    std::cout << "[broker paused] " << kJobs << " jobs, " << seen.size() << " released, " << copies
              << " copies\n";
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(kJobs));
    EXPECT_EQ(copies, kJobs) << process.log_tail(20);
    EXPECT_TRUE(eventually("SELECT count(*) FROM jobs WHERE state = 'done'", std::to_string(kJobs), 30s));
}

// While the broker is slow to confirm (here: paused), a run due later than the 5 s rung is held
// in memory and handed over 5 s before it is due (reference §6 "While the broker is busy"): a
// delay queue starts a run's TTL when the run arrives, so one handed over into a busy broker
// is released late. The runs come through the SQL intake, which needs no broker: a probe due
// now, whose publish then awaits its confirm, and a run due in 12 s, claimed while it waits.
// Handed over a horizon ahead, that run would be `enqueued` as soon as the broker continued.
TEST_F(Faults, a_run_claimed_while_the_broker_is_slow_to_confirm_waits_for_the_near_rung) {
    auto& process = start_hourglass();
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    const auto command = [&](const std::string& id, int delay_ms) {
        sql("INSERT INTO commands (routing_key, properties, headers) VALUES ('slow." + id +
            "', '{\"message_id\": \"" + id + "\"}', '{\"x-delay\": " + std::to_string(delay_ms) + "}')");
        return eventually("SELECT (lease_owner IS NOT NULL OR state <> 'pending')::text FROM jobs "
                          "WHERE id = '" + id + "'",
                          "true", 10s);
    };
    {
        BrokerPause pause;
        ASSERT_TRUE(pause.paused());
        ASSERT_TRUE(command("probe", 0)) << process.log_tail(20);
        std::this_thread::sleep_for(200ms);  // its publish has awaited its confirm over 20 ms
        ASSERT_TRUE(command("held", 12000)) << process.log_tail(20);
        // Its publish instant for the 11 s rung comes within a second: the publisher takes it
        // while the broker is still paused, and puts it back for the 5 s rung.
        std::this_thread::sleep_for(1500ms);
    }
    const auto probe = client.receive(10s);
    ASSERT_TRUE(probe) << process.log_tail(20);
    EXPECT_EQ(string_header(probe->message, "x-hourglass-id"), "probe");
    std::this_thread::sleep_for(1500ms);
    EXPECT_EQ(job_state("held"), "pending") << "held in memory for the 5 s rung, not handed over";
    EXPECT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'held'", "enqueued", 10s));

    const auto held = client.receive(15s);
    ASSERT_TRUE(held) << process.log_tail(20);
    EXPECT_EQ(string_header(held->message, "x-hourglass-id"), "held");
    EXPECT_TRUE(client.drain(2000ms, 5s).empty()) << "released once";
    ASSERT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'held'", "done", 10s));
    EXPECT_LT(sql("SELECT lateness_ms FROM jobs WHERE id = 'held'")[0][0].as<double>(), 1000.0);
    const auto metrics = http_get(process.http_port(), "/metrics").body;
    const auto at = metrics.find("\nhourglass_handover_held_total ");
    ASSERT_NE(at, std::string::npos);
    EXPECT_GE(std::stod(metrics.substr(at + 31)), 1.0);
}

// SIGTERM while the broker blocks every publisher: the process exits within --stop-timeout
// (the loader may be stuck in a socket write), and what it had claimed or not acked is finished
// by the next instance.
TEST_F(Faults, sigterm_exits_within_the_stop_timeout_while_the_broker_blocks_publishers) {
    const std::vector<std::string> flags = {"--horizon", "5s", "--lease", "2s", "--stop-timeout", "3s"};
    auto& process = start_hourglass(flags);
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    constexpr int kJobs = 300;
    std::vector<Message> jobs;
    for (int i = 0; i < kJobs; ++i) jobs.push_back(delayed("stop-" + std::to_string(i), 1000 + 10 * i));
    client.publish_all(jobs);
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs", std::to_string(kJobs)));
    services("rabbitmqctl", "set_vm_memory_high_watermark absolute 1");
    std::this_thread::sleep_for(3s);  // the loader is now blocked publishing
    const auto asked = std::chrono::steady_clock::now();
    const int status = process.terminate(20s);
    const auto took = std::chrono::steady_clock::now() - asked;
    services("rabbitmqctl", "set_vm_memory_high_watermark 0.4");
    EXPECT_EQ(status, 0) << process.log_tail();
    EXPECT_LT(took, 6s) << "SIGTERM took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                        << " ms with --stop-timeout 3s";

    start_hourglass(flags);
    std::map<std::string, int> seen;
    for (const auto& r : client.drain(4000ms, 60s)) ++seen[string_header(r.message, "x-hourglass-id")];
    std::cout << "[stop while blocked] SIGTERM took "
              << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
              << " ms; released " << seen.size() << " of " << kJobs << "\n";
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(kJobs)) << "nothing lost";
}

// Delay queues that refuse every publish (a max-length 0 reject-publish policy): the broker
// nacks the loader's publishes. Those runs go back to the store at once, the loader keeps
// trying at its poll pace (no spin, no restart), and when the queues accept again every run is
// released: no in-flight run is leaked.
TEST_F(Faults, runs_the_broker_refuses_go_back_to_the_store_and_are_released_later) {
    auto& process = start_hourglass({"--horizon", "5s"});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    const auto policy = prefix_ + "-refuse";
    std::string quoted_prefix;
    for (const char c : prefix_) quoted_prefix += c == '.' ? std::string("\\.") : std::string(1, c);
    services("rabbitmqctl", "set_policy --apply-to queues '" + policy + "' '^" +
                                quoted_prefix + "\\.delay\\.ttl-[0-9]+ms(\\.[0-9]+)?$' "  // every lane
                                "'{\"max-length\":0,\"overflow\":\"reject-publish\"}'");
    std::this_thread::sleep_for(1s);  // policies apply asynchronously
    constexpr int kJobs = 50;
    std::vector<Message> jobs;
    for (int i = 0; i < kJobs; ++i) jobs.push_back(delayed("refused-" + std::to_string(i), 500));
    client.publish_all(jobs);
    std::this_thread::sleep_for(4s);
    EXPECT_TRUE(client.drain(500ms, 1s).empty()) << "nothing can be released while refused";
    EXPECT_EQ(sql("SELECT count(*) FROM jobs WHERE state <> 'pending'")[0][0].as<int>(), 0);
    services("rabbitmqctl", "clear_policy '" + policy + "'");

    std::map<std::string, int> seen;
    for (const auto& r : client.drain(3000ms, 30s)) ++seen[string_header(r.message, "x-hourglass-id")];
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(kJobs)) << process.log_tail();
    EXPECT_TRUE(process.running());
    const auto log = process.log_tail(100000);
    std::size_t give_backs = 0;
    const std::string give_back_line = "claimed runs the broker did not confirm";
    for (auto at = log.find(give_back_line); at != std::string::npos;
         at = log.find(give_back_line, at + 1)) {
        ++give_backs;
    }
    EXPECT_GT(give_backs, 0u) << "the broker never refused: the policy did not apply";
    EXPECT_LT(give_backs, 100u) << "the loader spun on refused runs";
    EXPECT_EQ(log.find("(retry "), std::string::npos) << "no component restarted:\n" << log;
}

// An operator's transaction left open on a job's row: a cancel of that job used to hold up
// every command behind it until the transaction ended (23.6 s for the next schedule when it
// lasted 25 s). Now the cancel waits, the others are applied at once, and the cancel is
// applied once the lock is gone.
TEST_F(Faults, a_job_locked_by_another_transaction_holds_up_no_other_command) {
    auto& process = start_hourglass();
    Client client(amqp_url_);
    const auto replies = client.receipt_queue();
    auto victim = delayed("victim", 600000);
    client.publish(victim);
    ASSERT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'victim'", "pending", 10s));

    pqxx::connection operator_session(pg_url_);
    pqxx::work held(operator_session);
    held.exec("UPDATE " + held.quote_name(schema_) +
              ".jobs SET routing_key = routing_key WHERE id = 'victim'");

    client.publish(cancel_command("victim", replies));
    const auto sent = std::chrono::steady_clock::now();
    for (int i = 0; i < 5; ++i) {
        auto other = delayed("other-" + std::to_string(i), 600000);
        set_header(other.properties, "x-reply-to", replies);
        client.publish(other);
    }
    // Every other command is answered within seconds; the cancel is not answered yet.
    for (int i = 0; i < 5; ++i) {
        auto receipt = client.receive(5s);
        ASSERT_TRUE(receipt) << "receipt " << i;
        const auto view = parse_receipt(*receipt);
        EXPECT_EQ(view.status, "scheduled");
        EXPECT_TRUE(view.id.starts_with("other-")) << view.id;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - sent, 5s);
    EXPECT_EQ(job_state("victim"), "pending");
    EXPECT_TRUE(wait_for(
        [&] {
            return http_get(process.http_port(), "/metrics")
                       .body.find("hourglass_commands_waiting 1\n") != std::string::npos;
        },
        5s));

    held.commit();  // the operator's transaction ends
    auto receipt = client.receive(10s);
    ASSERT_TRUE(receipt) << "the cancel is applied once the lock is gone";
    const auto view = parse_receipt(*receipt);
    EXPECT_EQ(view.id, "victim");
    EXPECT_EQ(view.status, "cancelled");
    EXPECT_EQ(job_state("victim"), "cancelled");
    EXPECT_TRUE(wait_for(
        [&] {
            return http_get(process.http_port(), "/metrics")
                       .body.find("hourglass_commands_waiting 0\n") != std::string::npos;
        },
        5s));
}

// The loader's record of hand-overs meets the same lock: a run claimed (it waits in memory for
// its publish instant, with a 10 min horizon) when an operator's transaction locks its row.
// Runs handed over after it are recorded all the same; it is recorded once the lock is gone.
TEST_F(Faults, a_claimed_job_locked_by_another_transaction_holds_up_no_other_hand_over) {
    auto& process = start_hourglass({"--horizon", "10m"});
    Client client(amqp_url_);
    client.publish(delayed("victim", 35000));
    ASSERT_TRUE(eventually("SELECT (lease_owner IS NOT NULL)::text FROM jobs WHERE id = 'victim'",
                           "true", 10s));

    pqxx::connection operator_session(pg_url_);
    pqxx::work held(operator_session);
    held.exec("UPDATE " + held.quote_name(schema_) +
              ".jobs SET routing_key = routing_key WHERE id = 'victim'");
    // Claimed at once, published and confirmed after the victim, 5-15 s from now.
    for (int i = 0; i < 5; ++i) client.publish(delayed("other-" + std::to_string(i), 36000 + i));
    EXPECT_TRUE(eventually(
        "SELECT count(*) FROM jobs WHERE id LIKE 'other-%' AND state = 'enqueued'", "5", 20s))
        << process.log_tail();
    EXPECT_EQ(job_state("victim"), "pending");
    EXPECT_TRUE(wait_for(
        [&] {
            return http_get(process.http_port(), "/metrics")
                       .body.find("hourglass_handovers_waiting 1\n") != std::string::npos;
        },
        5s));

    held.commit();  // the operator's transaction ends
    EXPECT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'victim'", "enqueued", 10s));
    EXPECT_TRUE(wait_for(
        [&] {
            return http_get(process.http_port(), "/metrics")
                       .body.find("hourglass_handovers_waiting 0\n") != std::string::npos;
        },
        5s));
}

// SIGTERM while such a run waits to be recorded: the stop waits neither for its record nor to
// give back the claim (it stays claimed, for the next instance to take over once its lease
// ends). Waiting for the lock would keep the process until --stop-timeout (10 s) killed it.
TEST_F(Faults, a_stop_does_not_wait_for_a_claimed_job_locked_by_another_transaction) {
    auto& process = start_hourglass({"--horizon", "10m"});
    Client client(amqp_url_);
    client.publish(delayed("victim", 35000));
    ASSERT_TRUE(eventually("SELECT (lease_owner IS NOT NULL)::text FROM jobs WHERE id = 'victim'",
                           "true", 10s));
    pqxx::connection operator_session(pg_url_);
    pqxx::work held(operator_session);
    held.exec("UPDATE " + held.quote_name(schema_) +
              ".jobs SET routing_key = routing_key WHERE id = 'victim'");
    ASSERT_TRUE(wait_for(
        [&] {
            return http_get(process.http_port(), "/metrics")
                       .body.find("hourglass_handovers_waiting 1\n") != std::string::npos;
        },
        20s));

    const auto asked = std::chrono::steady_clock::now();
    const int status = process.terminate(20s);
    const auto took = std::chrono::steady_clock::now() - asked;
    EXPECT_EQ(status, 0) << process.log_tail();
    EXPECT_LT(took, 5s) << "SIGTERM took "
                        << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                        << " ms";
    EXPECT_NE(process.log_tail(100).find("stopping with 1 handed-over runs not recorded"),
              std::string::npos)
        << process.log_tail();
    held.commit();
    EXPECT_EQ(sql("SELECT state || ' ' || (lease_owner IS NOT NULL)::text FROM jobs "
                  "WHERE id = 'victim'")[0][0]
                  .as<std::string>(),
              "pending true");
}

// The audit's record of releases meets the same lock: a released job's row held by an
// operator's transaction. The releases after it are recorded all the same (were they not, they
// would also be published again after --resend-after, as if the broker had lost them).
TEST_F(Faults, a_released_job_locked_by_another_transaction_holds_up_no_other_record) {
    auto& process = start_hourglass();
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    client.publish(delayed("victim", 1500));
    ASSERT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'victim'", "enqueued", 10s));
    pqxx::connection operator_session(pg_url_);
    pqxx::work held(operator_session);
    held.exec("UPDATE " + held.quote_name(schema_) +
              ".jobs SET routing_key = routing_key WHERE id = 'victim'");
    ASSERT_TRUE(client.receive(5s)) << "the victim is released on time, its row locked or not";

    for (int i = 0; i < 5; ++i) client.publish(delayed("other-" + std::to_string(i), 1000 + i));
    EXPECT_TRUE(eventually("SELECT count(*) FROM jobs WHERE id LIKE 'other-%' AND state = 'done'",
                           "5", 10s))
        << process.log_tail();
    EXPECT_EQ(job_state("victim"), "enqueued");
    EXPECT_TRUE(wait_for(
        [&] {
            return http_get(process.http_port(), "/metrics")
                       .body.find("hourglass_releases_waiting 1\n") != std::string::npos;
        },
        5s));

    held.commit();  // the operator's transaction ends
    EXPECT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'victim'", "done", 10s));
    EXPECT_TRUE(wait_for(
        [&] {
            return http_get(process.http_port(), "/metrics")
                       .body.find("hourglass_releases_waiting 0\n") != std::string::npos;
        },
        5s));
    EXPECT_EQ(client.drain(500ms, 2s).size(), 5u) << "each other job released once";
}

// A lock that outlasts --resend-after: the release observed meanwhile is parked, so the loader
// does not take its run for one the broker lost and publish it again once the lock ends.
TEST_F(Faults, a_release_parked_for_a_lock_longer_than_resend_after_is_not_published_again) {
    start_hourglass({"--resend-after", "1s"});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    client.publish(delayed("victim", 1500));
    ASSERT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'victim'", "enqueued", 10s));
    pqxx::connection operator_session(pg_url_);
    pqxx::work held(operator_session);
    held.exec("UPDATE " + held.quote_name(schema_) +
              ".jobs SET routing_key = routing_key WHERE id = 'victim'");
    ASSERT_TRUE(client.receive(5s));
    EXPECT_TRUE(
        eventually("SELECT count(*) FROM parked_releases WHERE job_id = 'victim'", "1", 5s));
    std::this_thread::sleep_for(3s);  // three times --resend-after
    held.commit();

    EXPECT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'victim'", "done", 10s));
    EXPECT_EQ(sql("SELECT count(*) FROM parked_releases")[0][0].as<int>(), 0);
    EXPECT_EQ(sql("SELECT runs FROM jobs WHERE id = 'victim'")[0][0].as<int>(), 1);
    EXPECT_TRUE(client.drain(3000ms, 5s).empty()) << "the victim was published again";
}

}  // namespace
}  // namespace hourglass::testing
