// Release groups: runs due at one instant and published into one delay queue leave it in publish
// order, so the audit takes one copy per group (the last run's) and records the whole group
// with it. The broker queues one audit copy per group instead of one per run.
#include <gmock/gmock.h>

#include <map>
#include <set>

#include "integration/release_groups_fixture.hpp"
#include "store/job_store.hpp"
#include "store/migrations.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;

TEST_F(ReleaseGroups, a_hotspot_is_recorded_run_by_run_from_one_audit_copy_per_group) {
    auto& process = start_hourglass({"--horizon", "4s", "--delay-lanes", "4"});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    constexpr int kJobs = 200;
    const auto due = now_ms() + 3s;
    client.publish_all(scheduled_series("hot-", kJobs, due));

    const auto received = client.drain(4500ms, 20s);
    ASSERT_EQ(received.size(), static_cast<std::size_t>(kJobs));
    std::set<std::string> ids;
    for (const auto& r : received) {
        ids.insert(string_header(r.message, "x-hourglass-id"));
        EXPECT_GE(r.received_at, due) << "early";
        // The BCC key that keeps a copy from the audit never shows to consumers.
        EXPECT_EQ(find_header(r.message.properties, "BCC"), nullptr);
        EXPECT_EQ(r.message.routing_key, "jobs.test");
    }
    EXPECT_EQ(ids.size(), static_cast<std::size_t>(kJobs));

    // Every run ends done, with its release time and lateness, though few copies reached the audit.
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs WHERE state = 'done' AND released_at >= due_at "
                           "AND lateness_ms >= 0 AND released_run = 1",
                           std::to_string(kJobs), 15s))
        << process.log_tail(30);
    const auto grouped = sql("SELECT count(*) FROM jobs WHERE observed_with_id IS NOT NULL")[0][0].as<int>();
    EXPECT_GE(grouped, kJobs - 50) << "most runs observed with the last of their group";
    EXPECT_TRUE(wait_for([&] { return metric(process, "hourglass_releases_observed_total") == kJobs; }, 10s));
    const auto copies = metric(process, "hourglass_release_copies_total");
    EXPECT_EQ(copies, kJobs - grouped) << "one copy per group reached the audit";
    EXPECT_GE(copies, 4);  // one group per lane at least
    // Nothing left behind in the audit queue.
    EXPECT_EQ(client.queue_size(prefix_ + ".delay.audit").value_or(1), 0u);
}

// Burst release: the runs of an instant shared by many are held until their due time and
// published straight to the release exchange, as many as --max-burst-runs allows; the rest wait
// in the store until the instant and then go out the same way. None passes a delay queue (no
// x-death), none is early, each arrives once, and all end done from a few audit copies.
TEST_F(ReleaseGroups, a_burst_is_published_at_its_due_time_past_the_delay_queues_and_recorded) {
    // A horizon shorter than the lead: the loader's first claim of the burst sees all of it,
    // not what ingest has committed so far (a claim of fewer than 500 is no burst).
    auto& process = start_hourglass({"--horizon", "2s", "--max-burst-runs", "600"});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    constexpr int kJobs = 1500;
    const auto due = now_ms() + 4s;
    client.publish_all(scheduled_series("burst-", kJobs, due));

    expect_released_as_a_burst(process, client.drain(5500ms, 20s), kJobs, due);
}

// Targeted runs (x-hourglass-exchange) leave their forward delay queue in order too: the
// forwarder copies the last of each group to the audit and the rest are recorded with it. The
// loader's mark on the others never reaches the target.
TEST_F(ReleaseGroups, a_targeted_hotspot_is_recorded_run_by_run_from_one_audit_copy_per_group) {
    Client client(amqp_url_);
    const auto target = user_target(client, "hotspot");
    auto& process =
        start_hourglass(allowing_user_targets({"--horizon", "4s", "--delay-lanes", "4"}));
    constexpr int kJobs = 200;
    const auto due = now_ms() + 3s;
    client.publish_all(targeted_series("hot-", kJobs, due, target));

    const auto received = client.drain(4500ms, 20s);
    client.channel().delete_exchange(target);
    ASSERT_EQ(received.size(), static_cast<std::size_t>(kJobs));
    std::set<std::string> ids;
    for (const auto& r : received) {
        ids.insert(string_header(r.message, "x-hourglass-id"));
        EXPECT_GE(r.received_at, due) << "early";
        EXPECT_EQ(find_header(r.message.properties, "x-hourglass-observed-with"), nullptr);
        EXPECT_EQ(find_header(r.message.properties, "x-hourglass-exchange"), nullptr);
    }
    EXPECT_EQ(ids.size(), static_cast<std::size_t>(kJobs));

    ASSERT_TRUE(
        eventually("SELECT count(*) FROM jobs WHERE state = 'done' AND released_at >= due_at "
                   "AND lateness_ms >= 0 AND released_run = 1",
                   std::to_string(kJobs), 15s))
        << process.log_tail(30);
    const auto grouped =
        sql("SELECT count(*) FROM jobs WHERE observed_with_id IS NOT NULL")[0][0].as<int>();
    EXPECT_GE(grouped, kJobs - 50) << "most runs observed with the last of their group";
    EXPECT_TRUE(wait_for(
        [&] { return metric(process, "hourglass_releases_observed_total") == kJobs; }, 10s));
    EXPECT_EQ(metric(process, "hourglass_release_copies_total"), kJobs - grouped)
        << "one copy per group reached the audit";
    EXPECT_EQ(client.queue_size(prefix_ + ".delay.audit").value_or(1), 0u);
    EXPECT_EQ(client.queue_size(prefix_ + ".delay.forward").value_or(1), 0u);
}

// A popular cron minute: recurring jobs whose runs fall on one instant are a burst like any
// other. Each run arrives once at its instant, past the delay queues, is recorded from a few
// audit copies (release groups), and its job moves on to its next run (a day later), pending.
TEST_F(ReleaseGroups, a_burst_of_recurring_runs_is_published_at_its_due_time_and_each_job_moves_on) {
    auto& process = start_hourglass({"--horizon", "2s", "--max-burst-runs", "600"});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    constexpr int kJobs = 1500;
    // The whole second 4 to 5 s from now, once a day (seconds first: six fields).
    const auto due = std::chrono::ceil<std::chrono::seconds>(now_ms() + 4s);
    const auto time_of_day = std::chrono::hh_mm_ss(due - std::chrono::floor<std::chrono::days>(due));
    const auto expression = std::to_string(time_of_day.seconds().count()) + " " +
                            std::to_string(time_of_day.minutes().count()) + " " +
                            std::to_string(time_of_day.hours().count()) + " * * *";
    std::vector<Message> jobs;
    for (int i = 0; i < kJobs; ++i) {
        auto job = delayed("cron-" + std::to_string(i), 0);
        remove_header(job.properties, "x-delay");
        set_header(job.properties, "x-cron", expression);
        jobs.push_back(std::move(job));
    }
    client.publish_all(jobs);

    const auto received = client.drain(6500ms, 20s);
    expect_received_as_a_burst(process, received, kJobs, due);
    for (const auto& r : received) {
        const auto* run = find_header(r.message.properties, "x-hourglass-run");
        ASSERT_NE(run, nullptr);
        EXPECT_EQ(std::get<std::int64_t>(run->value), 1);
    }
    const auto next = format_rfc3339_ms(due + std::chrono::days{1});
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs WHERE state = 'pending' AND runs = 1 "
                           "AND released_run = 1 AND released_at >= '" + format_rfc3339_ms(due) +
                           "' AND lateness_ms >= 0 AND due_at = '" + next + "'",
                           std::to_string(kJobs), 15s))
        << process.log_tail(30);
    // In release groups, as one-shot runs: one audit copy per publish batch, not per run.
    EXPECT_LT(metric(process, "hourglass_release_copies_total"), kJobs / 10);
}

// A burst of targeted runs (the delayed-message plugin's path) goes past the forward ladder: held
// until its due time, published into the forward queue, and forwarded to its target from there.
// Each arrives once, on time, without x-death or hourglass's own control headers, and all end
// done from one audit copy per publish batch.
TEST_F(ReleaseGroups, a_targeted_burst_is_forwarded_at_its_due_time_past_the_forward_ladder) {
    Client client(amqp_url_);
    const auto target = user_target(client, "burst");
    // A horizon shorter than the lead, as above: the first claim sees the whole burst.
    auto& process = start_hourglass(allowing_user_targets({"--horizon", "2s", "--max-burst-runs", "600"}));
    constexpr int kJobs = 1500;
    const auto due = now_ms() + 4s;
    client.publish_all(targeted_series("burst-", kJobs, due, target));

    const auto received = client.drain(5500ms, 30s);
    client.channel().delete_exchange(target);
    expect_released_as_a_burst(process, received, kJobs, due);
    EXPECT_EQ(client.queue_size(prefix_ + ".delay.forward").value_or(1), 0u);
}

// Two instances' forwarders share the forward queue, which hands them its runs in turn, so a
// group's last run may be forwarded, and the group recorded, by one while the other still holds
// earlier runs of it. Those reach the target all the same, once, and every run ends done.
TEST_F(ReleaseGroups, a_targeted_group_split_between_two_forwarders_is_delivered_and_recorded) {
    Client client(amqp_url_);
    const auto target = user_target(client, "split");
    // Through the forward ladder: a claim of 500 or more would be a burst (covered above).
    const auto flags = allowing_user_targets({"--horizon", "4s", "--max-burst-runs", "0"});
    auto& first = start_hourglass(flags);
    auto& second = start_hourglass(flags);
    constexpr int kJobs = 600;
    const auto due = now_ms() + 3s;
    client.publish_all(targeted_series("split-", kJobs, due, target));

    const auto received = client.drain(4500ms, 30s);
    client.channel().delete_exchange(target);
    std::map<std::string, int> times;
    for (const auto& r : received) ++times[string_header(r.message, "x-hourglass-id")];
    EXPECT_EQ(times.size(), static_cast<std::size_t>(kJobs)) << "lost";
    EXPECT_EQ(received.size(), static_cast<std::size_t>(kJobs)) << "duplicated";
    // Each forwarder published some: the groups were split between them.
    for (const auto* process : {&first, &second}) {
        EXPECT_GT(metric(*process, "hourglass_releases_forwarded_total"), 0)
            << process->log_tail(20);
    }
    ASSERT_TRUE(
        eventually("SELECT count(*) FROM jobs WHERE state = 'done' AND released_at >= due_at",
                   std::to_string(kJobs), 15s));
    EXPECT_GE(sql("SELECT count(*) FROM jobs WHERE observed_with_id IS NOT NULL")[0][0].as<int>(),
              kJobs / 2);
    EXPECT_EQ(client.queue_size(prefix_ + ".delay.forward").value_or(1), 0u);
}

// An instance with --no-audit on a prefix that an instance with the audit declared (its audit
// queue still bound): no release leaves a copy there, where nothing would ever consume it.
TEST_F(ReleaseGroups, without_the_audit_no_copy_is_left_in_an_audit_queue_declared_before) {
    start_hourglass({"--horizon", "4s"}).terminate();
    start_hourglass({"--horizon", "4s", "--no-audit"});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    constexpr int kJobs = 20;
    // One due time each, so that every run is released alone (no group to share a copy).
    client.publish_all(scheduled_series("alone-", kJobs, now_ms() + 2s, 50ms));
    ASSERT_EQ(client.drain(3500ms, 20s).size(), static_cast<std::size_t>(kJobs));
    std::this_thread::sleep_for(500ms);  // a copy would be queued with the release
    EXPECT_EQ(client.queue_size(prefix_ + ".delay.audit").value_or(1), 0u);
    EXPECT_EQ(sql("SELECT count(*) FROM jobs WHERE state = 'enqueued' AND NOT audited")[0][0].as<int>(),
              kJobs);
}

// The runs of a group are found by the run they are observed with, through an index that holds
// only such runs (migration 015): in a steady load nearly every run is observed alone, and an
// index of every enqueued row took an entry per hand-over that no lookup read.
TEST_F(ReleaseGroups, the_group_index_holds_only_runs_observed_with_another_and_finds_them) {
    store::migrate(*db_, schema_, false);
    // 20,000 runs in flight, each observed alone (by hand: about 600 pages of jobs).
    sql("INSERT INTO jobs (id, routing_key, state, due_at, body, properties, runs, enqueued_at) "
        "SELECT 'alone-' || i, 'k', 'enqueued', now() + interval '1 minute', '\\x', '{}', 1, now() "
        "FROM generate_series(1, 20000) AS i");
    const auto due = std::chrono::time_point_cast<Milliseconds>(now_us()) + 200ms;
    {
        store::JobStore store({pg_url_, schema_});
        std::vector<Command> commands;
        for (const auto* id : {"g1", "g2", "g3"}) {
            ScheduleCommand job;
            job.id = id;
            job.routing_key = "jobs.test";
            job.due_at = due;
            job.accepted_at = due - 1s;
            commands.push_back(Command{job, id, std::nullopt, std::nullopt});
        }
        store.apply(commands);
        ASSERT_EQ(store.claim_due("loader", due + 1s, 10, 60s).size(), 3u);
        store.record_handed_over("loader", {{"g1", 1, std::nullopt, true, RunRef{"g3", 1}},
                                            {"g2", 1, std::nullopt, true, RunRef{"g3", 1}},
                                            {"g3", 1, std::nullopt, true, std::nullopt}});
        sql("ANALYZE jobs");
        const auto released_at = std::chrono::time_point_cast<std::chrono::microseconds>(due) + 2ms;
        EXPECT_EQ(store.record_releases({{"g3", 1, due, released_at}}).lateness_ms.size(), 3u);
    }  // its connection closes: PostgreSQL then counts its index scans in pg_stat_user_indexes
    EXPECT_EQ(sql("SELECT string_agg(state, ',' ORDER BY id) FROM jobs WHERE id LIKE 'g%'")[0][0]
                  .as<std::string>(),
              "done,done,done");

    // Two entries at most (g1 and g2 until their release), where every enqueued row took 20,000.
    EXPECT_EQ(sql("SELECT pg_relation_size('jobs_enqueued_in_group') <= 2 * "
                  "current_setting('block_size')::int")[0][0].as<bool>(),
              true)
        << sql("SELECT pg_relation_size('jobs_enqueued_in_group')")[0][0].as<std::string>();
    EXPECT_EQ(sql("SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() "
                  "AND indexname = 'jobs_enqueued_observed_with'")[0][0].as<int>(),
              0);
    EXPECT_TRUE(eventually("SELECT idx_scan > 0 FROM pg_stat_user_indexes WHERE "
                           "schemaname = current_schema() AND indexrelname = 'jobs_enqueued_in_group'",
                           "t", 15s))
        << "the group's runs were not found through the index";
}

// The release of a group's last run can be recorded before the loader records the group's
// hand-over (a TTL of 0 releases at once): the hand-over then ends the group done. Either order
// gives every run the group's release time.
TEST_F(ReleaseGroups, a_group_ends_done_whichever_of_release_and_hand_over_is_recorded_first) {
    store::migrate(*db_, schema_, false);
    store::JobStore store({pg_url_, schema_});
    const auto due = std::chrono::time_point_cast<Milliseconds>(now_us()) + 200ms;
    std::vector<Command> commands;
    for (const auto* id : {"a1", "a2", "a3", "b1", "b2"}) {
        ScheduleCommand job;
        job.id = id;
        job.routing_key = "jobs.test";
        job.due_at = due;
        job.accepted_at = due - 1s;
        commands.push_back(Command{job, id, std::nullopt, std::nullopt});
    }
    store.apply(commands);
    ASSERT_EQ(store.claim_due("loader", due + 1s, 10, 60s).size(), 5u);
    const auto released_at = std::chrono::time_point_cast<std::chrono::microseconds>(due) + 3500us;

    // Group a: hand-over first, then the release of a3 (its last run).
    store.record_handed_over("loader", {{"a1", 1, std::nullopt, true, RunRef{"a3", 1}},
                                        {"a2", 1, std::nullopt, true, RunRef{"a3", 1}},
                                        {"a3", 1, std::nullopt, true, std::nullopt}});
    EXPECT_EQ(sql("SELECT string_agg(state, ',' ORDER BY id) FROM jobs WHERE id LIKE 'a%'")[0][0]
                  .as<std::string>(),
              "enqueued,enqueued,enqueued");
    EXPECT_EQ(store.record_releases({{"a3", 1, due, released_at}}).lateness_ms.size(), 3u);

    // Group b: the release of b2 first, then the hand-over.
    EXPECT_EQ(store.record_releases({{"b2", 1, due, released_at}}).lateness_ms.size(), 1u);
    store.record_handed_over("loader", {{"b1", 1, std::nullopt, true, RunRef{"b2", 1}},
                                        {"b2", 1, std::nullopt, true, std::nullopt}});

    const auto rows = sql("SELECT id, state, released_run, round(lateness_ms::numeric, 1)::text, "
                          "released_at = to_timestamp(" +
                          std::to_string(released_at.time_since_epoch().count()) +
                          " / 1000000.0) FROM jobs ORDER BY id");
    ASSERT_EQ(rows.size(), 5u);
    for (const auto& row : rows) {
        const auto id = row[0].as<std::string>();
        EXPECT_EQ(row[1].as<std::string>(), "done") << id;
        EXPECT_EQ(row[2].as<int>(), 1) << id;
        EXPECT_EQ(row[3].as<std::string>(), "3.5") << id;  // released_at - due, for every run
        EXPECT_TRUE(row[4].as<bool>()) << id;
    }
}

// Recurring runs in release groups (a popular cron minute): their rows move on to the next run
// at the hand-over (pending, a new due_at), and the release is still recorded for the run that
// was released, whichever is recorded first, including in a group that mixes them with
// one-shot runs. A record never marks a recurring run twice, nor a later run released.
TEST_F(ReleaseGroups, recurring_runs_in_a_group_are_recorded_whichever_of_release_and_hand_over_comes_first) {
    store::migrate(*db_, schema_, false);
    store::JobStore store({pg_url_, schema_});
    const auto due = std::chrono::time_point_cast<Milliseconds>(now_us()) + 200ms;
    const auto next = due + 60s;
    std::vector<Command> commands;
    for (const auto* id : {"a1", "a2", "a3", "b1", "b2", "m1", "m2", "m3"}) {
        ScheduleCommand job;
        job.id = id;
        job.routing_key = "jobs.test";
        job.due_at = due;
        job.accepted_at = due - 1s;
        // m2 is one-shot, in a group with recurring m1 and m3.
        if (std::string_view(id) != "m2") job.cron = CronSpec{"* * * * *", "UTC", {}, {}};
        commands.push_back(Command{job, id, std::nullopt, std::nullopt});
    }
    store.apply(commands);
    ASSERT_EQ(store.claim_due("loader", due + 1s, 10, 60s).size(), 8u);
    const auto released_at = std::chrono::time_point_cast<std::chrono::microseconds>(due) + 3500us;
    const auto release = [&](const char* id) { return ObservedRelease{id, 1, due, released_at}; };

    // Group a: hand-over first, then the release of a3 (its last run).
    store.record_handed_over("loader", {{"a1", 1, next, true, RunRef{"a3", 1}},
                                        {"a2", 1, next, true, RunRef{"a3", 1}},
                                        {"a3", 1, next, true, std::nullopt}});
    EXPECT_EQ(store.record_releases({release("a3")}).lateness_ms.size(), 3u);
    EXPECT_EQ(store.record_releases({release("a3")}).lateness_ms.size(), 1u)
        << "a copy received twice records the group's runs once";
    // Group b: the release of b2 first, then the hand-over.
    EXPECT_EQ(store.record_releases({release("b2")}).lateness_ms.size(), 1u);
    store.record_handed_over("loader", {{"b1", 1, next, true, RunRef{"b2", 1}},
                                        {"b2", 1, next, true, std::nullopt}});
    // Group m: recurring, one-shot and recurring, observed through the last (recurring) run.
    store.record_handed_over("loader", {{"m1", 1, next, true, RunRef{"m3", 1}},
                                        {"m2", 1, std::nullopt, true, RunRef{"m3", 1}},
                                        {"m3", 1, next, true, std::nullopt}});
    EXPECT_EQ(store.record_releases({release("m3")}).lateness_ms.size(), 3u);

    const auto rows = sql("SELECT id, state, runs, released_run, round(lateness_ms::numeric, 1)::text, "
                          "released_at = to_timestamp(" +
                          std::to_string(released_at.time_since_epoch().count()) +
                          " / 1000000.0), due_at = to_timestamp(" +
                          std::to_string(to_epoch_ms(next)) + " / 1000.0) FROM jobs ORDER BY id");
    ASSERT_EQ(rows.size(), 8u);
    for (const auto& row : rows) {
        const auto id = row[0].as<std::string>();
        const bool recurring = id != "m2";
        EXPECT_EQ(row[1].as<std::string>(), recurring ? "pending" : "done") << id;
        EXPECT_EQ(row[2].as<int>(), 1) << id;
        EXPECT_EQ(row[3].as<int>(), 1) << id;
        EXPECT_EQ(row[4].as<std::string>(), "3.5") << id;  // released_at - the run's due time
        EXPECT_TRUE(row[5].as<bool>()) << id;
        EXPECT_EQ(row[6].as<bool>(), recurring) << id << ": moved on to its next run";
    }

    // The next run of a1 is handed over alone: the old group's copy, seen again, leaves it be.
    ASSERT_EQ(sql("UPDATE jobs SET lease_owner = 'loader' WHERE id = 'a1' RETURNING id").size(), 1u);
    store.record_handed_over("loader", {{"a1", 2, next + 60s, true, std::nullopt}});
    store.record_releases({release("a3")});
    EXPECT_EQ(sql("SELECT released_run FROM jobs WHERE id = 'a1'")[0][0].as<int>(), 1);
}

// An operator's open transaction holds a run of a group (not the one observed) or a run
// observed alone: the record of the audit neither waits nor records part of a group; it records
// the rest and parks those releases, which it records in full once the lock is gone. Parked,
// their runs are not taken for runs the broker lost (--resend-after).
TEST_F(ReleaseGroups, a_record_parks_the_releases_whose_groups_another_transaction_holds) {
    store::migrate(*db_, schema_, false);
    store::JobStore store({pg_url_, schema_});
    const auto due = std::chrono::time_point_cast<Milliseconds>(now_us()) + 200ms;
    std::vector<Command> commands;
    for (const auto* id : {"a1", "a2", "a3", "b1", "c1"}) {
        ScheduleCommand job;
        job.id = id;
        job.routing_key = "jobs.test";
        job.due_at = due;
        job.accepted_at = due - 1s;
        commands.push_back(Command{job, id, std::nullopt, std::nullopt});
    }
    store.apply(commands);
    ASSERT_EQ(store.claim_due("loader", due + 1s, 10, 60s).size(), 5u);
    ASSERT_TRUE(store
                    .record_handed_over("loader", {{"a1", 1, std::nullopt, true, RunRef{"a3", 1}},
                                                   {"a2", 1, std::nullopt, true, RunRef{"a3", 1}},
                                                   {"a3", 1, std::nullopt, true, std::nullopt},
                                                   {"b1", 1, std::nullopt, true, std::nullopt},
                                                   {"c1", 1, std::nullopt, true, std::nullopt}})
                    .empty());
    pqxx::connection operator_session(pg_url_);
    pqxx::work held(operator_session);
    held.exec("UPDATE " + held.quote_name(schema_) +
              ".jobs SET routing_key = routing_key "
              "WHERE id IN ('a2', 'b1')");

    const auto released_at = std::chrono::time_point_cast<std::chrono::microseconds>(due) + 3500us;
    const std::vector<ObservedRelease> releases = {
        {"a3", 1, due, released_at}, {"b1", 1, due, released_at}, {"c1", 1, due, released_at}};
    const auto asked = std::chrono::steady_clock::now();
    const auto recorded = store.record_releases(releases);
    EXPECT_LT(std::chrono::steady_clock::now() - asked, 1s) << "the record waited for the lock";
    EXPECT_EQ(recorded.parked, (std::vector<std::size_t>{0, 1}));
    EXPECT_EQ(recorded.lateness_ms.size(), 1u);
    const auto states = [&] {
        return sql("SELECT string_agg(id || ' ' || state, ',' ORDER BY id) FROM jobs")[0][0]
            .as<std::string>();
    };
    const auto parked = [&] {
        return sql("SELECT coalesce(string_agg(job_id || ':' || run, ',' ORDER BY job_id), '') "
                   "FROM parked_releases")[0][0]
            .as<std::string>();
    };
    EXPECT_EQ(states(), "a1 enqueued,a2 enqueued,a3 enqueued,b1 enqueued,c1 done");
    EXPECT_EQ(parked(), "a3:1,b1:1");

    // While the lock lasts, the record of the parked neither waits nor records them.
    const auto tried = std::chrono::steady_clock::now();
    const auto still = store.record_parked_releases();
    EXPECT_LT(std::chrono::steady_clock::now() - tried, 1s) << "the record waited for the lock";
    EXPECT_TRUE(still.lateness_ms.empty());
    EXPECT_EQ(still.still_parked, 2u);

    held.abort();
    // Long after --resend-after, no run of theirs is taken for a lost one: a3 and b1 are
    // parked, a1 and a2 are observed with a3.
    const auto resend =
        store.claim_due("another", due + 1s, store::ClaimLimit{.runs = 10}, 60s, due + 1h);
    EXPECT_TRUE(resend.runs.empty()) << resend.runs.size() << " runs taken for lost ones";
    const auto retried = store.record_parked_releases();
    EXPECT_EQ(retried.lateness_ms.size(), 4u);
    EXPECT_EQ(retried.still_parked, 0u);
    EXPECT_EQ(states(), "a1 done,a2 done,a3 done,b1 done,c1 done");
    EXPECT_EQ(parked(), "");
}

// A job whose routing key is the audit key: its release is copied to the audit whatever
// the loader adds, so it is observed alone, released once and done.
TEST_F(ReleaseGroups, a_routing_key_equal_to_the_audit_key_is_released_once_and_observed) {
    start_hourglass({"--horizon", "4s", "--resend-after", "1s"});
    Client client(amqp_url_);
    const auto key = ".." + prefix_ + ".release-copied-to-the-audit..";
    client.subscribe(out_exchange(), "#");
    client.publish_all({delayed("odd-key", 300, key), delayed("plain-key", 300)});
    const auto received = client.drain(6000ms, 15s);  // quiet long after a re-send would come
    ASSERT_EQ(received.size(), 2u) << "each released once, never re-sent";
    std::set<std::string> keys;
    for (const auto& r : received) keys.insert(r.message.routing_key);
    EXPECT_EQ(keys, (std::set<std::string>{key, "jobs.test"}));
    EXPECT_TRUE(eventually("SELECT string_agg(id || ':' || state || ':' || audited, ',' ORDER BY id) "
                           "FROM jobs",
                           "odd-key:done:true,plain-key:done:true", 10s));
    EXPECT_EQ(client.queue_size(prefix_ + ".delay.audit").value_or(1), 0u);
}

}  // namespace
}  // namespace hourglass::testing
