// Each job once under the faults that once released a job many times or parked it (reference
// §6 "Leases", docs/architecture.md "Fencing"): an instance taken for dead, a claim whose
// commit reply was lost, a full consumer queue that refuses a burst, a resend under a live
// owner, and enqueued_at never after released_at.
#include <future>
#include <thread>

#include "integration/harness.hpp"
#include "store/job_store.hpp"
#include "store/migrations.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;

class Fencing : public HourglassTest {
protected:
    // Releases per job id among `received`, for ids starting with `stem`.
    static std::map<std::string, int> per_job(const std::vector<Received>& received, const std::string& stem) {
        std::map<std::string, int> seen;
        for (const auto& r : received) {
            const auto id = string_header(r.message, "x-hourglass-id");
            if (id.starts_with(stem)) ++seen[id];
        }
        return seen;
    }
    static int duplicates(const std::map<std::string, int>& seen) {
        int extra = 0;
        for (const auto& [id, count] : seen) extra += count - 1;
        return extra;
    }
    int count(const std::string& query) { return sql(query)[0][0].as<int>(); }
    // As if `id` had beaten without a break for seconds: it may fence others.
    void beating_for_a_while(const std::string& id) {
        sql("UPDATE instances SET beating_since = now() - interval '10 seconds' WHERE id = '" + id + "'");
    }
};

// Another instance takes this one for dead (its heartbeat looked 3 s old: a stall) while it
// holds a burst in memory: the registration deleted and the claims given back in one
// transaction, as forget_dead_instances does. Before fencing, the next heartbeat re-created the
// registration, the instance claimed the runs again beside its in-memory copies and released
// each twice.
TEST_F(Fencing, an_instance_taken_for_dead_drops_what_it_holds_and_releases_each_job_once) {
    // A 5 s horizon for jobs due in 10 s: every job is committed before the first is claimed, so
    // one claim takes the whole burst and holds it (with the default horizon, a first claim of
    // the jobs of a first small ingest batch could hand them to the delay queues at once, and
    // wiping their leases before their record would duplicate them: a crash-like fault).
    auto& process = start_hourglass({"--horizon", "5s"});
    Client receiver(amqp_url_);
    receiver.subscribe(out_exchange(), "#");
    constexpr int kJobs = 600;  // a burst: held in memory until its instant
    const auto due = now_ms() + 10s;
    Client(amqp_url_).publish_all(scheduled_series("fenced-", kJobs, due));
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs WHERE lease_owner IS NOT NULL",
                           std::to_string(kJobs), 9s))
        << process.log_tail();
    sql("WITH gone AS (DELETE FROM instances RETURNING id) "
        "UPDATE jobs SET lease_owner = NULL, lease_until = NULL "
        "WHERE lease_owner IN (SELECT id FROM gone)");
    std::this_thread::sleep_until(due);
    const auto seen = per_job(receiver.drain(3000ms, 30s), "fenced-");
    std::cout << "[taken for dead] jobs " << kJobs << ", released " << seen.size()
              << ", duplicates " << duplicates(seen) << "\n";
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(kJobs));
    EXPECT_EQ(duplicates(seen), 0);
    EXPECT_NE(process.log_tail(100000).find("took this one for dead"), std::string::npos);
    EXPECT_EQ(count("SELECT count(*) FROM instances"), 1) << "registered again";
}

// A row leased to the live instance behind its back (an insert or a claim whose COMMIT
// succeeded but whose reply was lost): nobody else may claim a live owner's row, so it waited
// until a restart. Now its owner gives it back within seconds.
TEST_F(Fencing, a_run_leased_to_a_live_instance_that_does_not_hold_it_is_released) {
    auto& process = start_hourglass({"--horizon", "2s"});
    Client receiver(amqp_url_);
    receiver.subscribe(out_exchange(), "#");
    Client(amqp_url_).publish(delayed("orphan", 6000));
    ASSERT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'orphan'", "pending"));
    ASSERT_TRUE(eventually("SELECT count(*) FROM instances", "1"));
    // As a claim 11 s ago would have left it (lease_until = claim + --lease 30 s + 1 s step).
    sql("UPDATE jobs SET lease_owner = (SELECT id FROM instances), "
        "lease_until = now() + interval '20 seconds' WHERE id = 'orphan'");
    const auto released = receiver.receive(15s);
    ASSERT_TRUE(released) << "parked under its live owner\n" << process.log_tail();
    EXPECT_EQ(string_header(released->message, "x-hourglass-id"), "orphan");
    const auto due = parse_rfc3339(string_header(released->message, "x-hourglass-due"));
    ASSERT_TRUE(due);
    EXPECT_LT(released->received_at - *due, 8s) << "given back within seconds";
    EXPECT_FALSE(receiver.receive(2s)) << "released twice";
}

// A queue bound to the release exchange at its length limit with x-overflow reject-publish:
// the broker nacks a burst's publish although the healthy queue beside it got its copy. A nack
// given back was claimed and published again round after round (30,673 copies of 1,500 jobs).
TEST_F(Fencing, a_full_consumer_queue_never_multiplies_a_burst) {
    auto& process = start_hourglass({"--horizon", "5s"});
    Client client(amqp_url_);
    const auto full = prefix_ + ".full";
    client.publish_channel().declare_queue(full,
                                      {{"x-queue-type", std::string("classic")},
                                       {"x-max-length", std::int32_t{0}},
                                       {"x-overflow", std::string("reject-publish")}});
    client.publish_channel().bind_queue(full, out_exchange(), "#");
    Client receiver(amqp_url_);
    receiver.subscribe(out_exchange(), "#");
    constexpr int kJobs = 600;
    Client(amqp_url_).publish_all(scheduled_series("burst-", kJobs, now_ms() + 4s));
    const auto seen = per_job(receiver.drain(6000ms, 40s), "burst-");
    std::cout << "[full consumer queue] jobs " << kJobs << ", released " << seen.size()
              << ", duplicates " << duplicates(seen) << "\n";
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(kJobs)) << process.log_tail();
    EXPECT_EQ(duplicates(seen), 0);
    EXPECT_EQ(count("SELECT count(*) FROM jobs WHERE id LIKE 'burst-%' AND state = 'pending'"), 0);
}

// enqueued_at is when the run was handed to the broker: never after its release.
TEST_F(Fencing, enqueued_at_is_never_after_released_at) {
    start_hourglass({"--horizon", "5s"});
    Client receiver(amqp_url_);
    receiver.subscribe(out_exchange(), "#");
    constexpr int kJobs = 600;
    Client client(amqp_url_);
    client.publish_all(scheduled_series("at-burst-", kJobs, now_ms() + 1500ms));
    std::vector<Message> soon;
    for (int i = 0; i < 50; ++i) soon.push_back(delayed("at-soon-" + std::to_string(i), 200 + i * 20));
    client.publish_all(soon);
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs WHERE state = 'done'", std::to_string(kJobs + 50), 30s));
    const auto after = sql("SELECT id, enqueued_at::text, released_at::text FROM jobs "
                           "WHERE enqueued_at > released_at");
    EXPECT_EQ(after.size(), 0u) << "e.g. " << (after.empty() ? "" : after[0][0].c_str()) << " enqueued "
                                << (after.empty() ? "" : after[0][1].c_str()) << ", released "
                                << (after.empty() ? "" : after[0][2].c_str());
}

// A release group whose last run was given back (its connection dropped before it left): the
// runs handed over with it are observed through it, so when it is claimed again it takes its
// own audit copy (observe_itself); and retention never deletes a run that handed-over runs are
// still observed with. Else they stayed `enqueued` and were published again after
// --resend-after.
TEST_F(Fencing, the_run_a_group_is_observed_with_is_claimed_to_observe_itself_and_kept) {
    store::migrate(*db_, schema_, false);
    store::JobStore store({pg_url_, schema_});
    sql("INSERT INTO jobs (id, routing_key, due_at, body, properties) "
        "SELECT id, 'jobs.test', now() + interval '1 second', '\\x00', '{}' "
        "FROM unnest(ARRAY['last', 'member', 'alone']) id");
    ASSERT_EQ(store.claim_due("loader", now_ms() + 60s, 10, 60s).size(), 3u);
    store.record_handed_over("loader", {{"member", 1, std::nullopt, true, RunRef{"last", 1}}});
    EXPECT_TRUE(store.release_claims("loader", {"last", "alone"}).empty());
    std::map<std::string, bool> observe_itself;
    for (const auto& run : store.claim_due("loader", now_ms() + 60s, 10, 60s)) {
        observe_itself[run.id] = run.observe_itself;
    }
    EXPECT_EQ(observe_itself, (std::map<std::string, bool>{{"last", true}, {"alone", false}}));

    // Retention: "last" ended long ago, "member" still waits for its record through it.
    sql("UPDATE jobs SET state = 'done', updated_at = now() - interval '30 days', "
        "lease_owner = NULL WHERE id IN ('last', 'alone')");
    store.prune_ended(Milliseconds{1000}, 100);
    EXPECT_EQ(sql("SELECT string_agg(id, ',' ORDER BY id) FROM jobs")[0][0].as<std::string>(),
              "last,member");
}

// A resend (a run handed over, its release not observed) claimed by a live instance stays its
// own however long its publish takes (a memory alarm longer than the lease): before, any other
// instance took it once lease_until passed, and both resent it.
TEST_F(Fencing, a_resend_claimed_by_a_live_instance_is_not_taken_by_another) {
    store::migrate(*db_, schema_, false);
    store::JobStore store({pg_url_, schema_});
    sql("INSERT INTO jobs (id, routing_key, due_at, body, properties) "
        "VALUES ('resend', 'jobs.test', now() - interval '10 seconds', '\\x00', '{}')");
    store.register_instance("a");
    store.register_instance("b");
    ASSERT_EQ(store.claim_due("a", now_ms() + 60s, 10, 60s).size(), 1u);
    store.record_handed_over("a", {{"resend", 1, std::nullopt, true, std::nullopt}});
    const auto resend_before = now_ms() + 1h;
    // "a" claims it again to resend it, with a lease that ends at once.
    ASSERT_EQ(store.claim_due("a", now_ms() + 60s, store::ClaimLimit{.runs = 10}, 1ms, resend_before).runs.size(), 1u);
    std::this_thread::sleep_for(50ms);
    store.heartbeat("a", 3000ms, 2000ms);
    EXPECT_TRUE(store.claim_due("b", now_ms() + 60s, store::ClaimLimit{.runs = 10}, 60s, resend_before).runs.empty())
        << "another instance took a live instance's resend";
    // Once "a" stops beating, a live "b" fences it and its resend is taken over as any claim.
    sql("UPDATE instances SET heartbeat_at = now() - interval '10 seconds' WHERE id = 'a'");
    beating_for_a_while("b");
    EXPECT_EQ(store.heartbeat("b", 3000ms, 2000ms).dead, std::vector<std::string>{"a"});
    EXPECT_EQ(store.claim_due("b", now_ms() + 60s, store::ClaimLimit{.runs = 10}, 60s, resend_before).runs.size(), 1u);
}

// The ownership rule (docs/architecture.md "Ownership"): a silent instance keeps its claims
// until a live one fences it. A stall of a few seconds made every instance look silent; the
// claim's expired-lease path then took a burst held in memory past its lease from an owner it
// had not fenced, whose next beat succeeded, and both released it (2,000 jobs twice).
TEST_F(Fencing, a_silent_instance_keeps_its_claims_until_a_live_one_fences_it) {
    store::migrate(*db_, schema_, false);
    store::JobStore a({pg_url_, schema_});
    store::JobStore b({pg_url_, schema_});
    sql("INSERT INTO jobs (id, routing_key, due_at, body, properties) "
        "VALUES ('held', 'jobs.test', now() + interval '30 seconds', '\\x00', '{}')");
    a.register_instance("a");
    b.register_instance("b");
    // "a" holds it past its lease (a burst waits in memory for its instant).
    ASSERT_EQ(a.claim_due("a", now_ms() + 60s, 10, 1ms).size(), 1u);
    std::this_thread::sleep_for(20ms);
    // A stall: both beats are seconds old, neither instance was fenced.
    beating_for_a_while("b");
    sql("UPDATE instances SET heartbeat_at = now() - interval '5 seconds'");
    EXPECT_TRUE(b.claim_due("b", now_ms() + 60s, 10, 60s).empty())
        << "took a run from an owner it had not fenced";
    // Just back from the stall itself, "b" fences nobody.
    EXPECT_TRUE(b.heartbeat("b", 3000ms, 2000ms).dead.empty());
    EXPECT_TRUE(a.heartbeat("a", 3000ms, 2000ms).registered) << "the stall alone fenced it";
    EXPECT_TRUE(b.claim_due("b", now_ms() + 60s, 10, 60s).empty());
    // "a" goes silent for good; "b", beating, fences it and takes the run.
    sql("UPDATE instances SET heartbeat_at = now() - interval '5 seconds' WHERE id = 'a'");
    beating_for_a_while("b");
    EXPECT_EQ(b.heartbeat("b", 3000ms, 2000ms).dead, std::vector<std::string>{"a"});
    EXPECT_EQ(b.claim_due("b", now_ms() + 60s, 10, 60s).size(), 1u);
    EXPECT_FALSE(a.heartbeat("a", 3000ms, 2000ms).registered) << "fenced, yet beat on";
}

// After a stall of PostgreSQL the first beats to run find every instance silent. An instance
// whose previous beat was fresh could fence: one that beat twice in a row after the stall
// fenced another whose beat, and the record of a run it had just published, still waited
// behind it, and that run was published twice (found by the lease simulation). An instance now
// fences only once it has itself beaten without a break for the publish grace (2 s).
TEST_F(Fencing, an_instance_back_from_a_stall_fences_nobody_until_it_has_beaten_for_the_grace) {
    store::migrate(*db_, schema_, false);
    store::JobStore a({pg_url_, schema_});
    store::JobStore b({pg_url_, schema_});
    a.register_instance("a");
    b.register_instance("b");
    beating_for_a_while("b");
    sql("UPDATE instances SET heartbeat_at = now() - interval '5 seconds'");  // a stall
    EXPECT_TRUE(b.heartbeat("b", 3000ms, 2000ms).dead.empty()) << "fenced with the first beat after a stall";
    EXPECT_TRUE(b.heartbeat("b", 3000ms, 2000ms).dead.empty()) << "fenced with the second beat after a stall";
    EXPECT_TRUE(a.heartbeat("a", 3000ms, 2000ms).registered) << "its beat, behind the stall, was taken for silence";
    // "a" goes silent for good: "b" fences it once its own beats have run for the grace.
    sql("UPDATE instances SET heartbeat_at = now() - interval '5 seconds' WHERE id = 'a'");
    EXPECT_TRUE(b.heartbeat("b", 3000ms, 2000ms).dead.empty());
    beating_for_a_while("b");
    EXPECT_EQ(b.heartbeat("b", 3000ms, 2000ms).dead, std::vector<std::string>{"a"});
}

// A transaction that holds an instance's registration (an operator's SELECT ... FOR UPDATE, or
// the session of a heartbeat cut from its client) stopped every instance's heartbeat, and with
// it every release: the takeover waited on the row it wanted to delete. Now it fences the
// silent instance without its row's lock, and that instance's later beats fail.
TEST_F(Fencing, a_locked_registration_never_holds_up_another_instances_heartbeat) {
    store::migrate(*db_, schema_, false);
    store::JobStore a({pg_url_, schema_});
    store::JobStore b({pg_url_, schema_});
    sql("INSERT INTO jobs (id, routing_key, due_at, body, properties) "
        "VALUES ('locked-owner', 'jobs.test', now() + interval '30 seconds', '\\x00', '{}')");
    a.register_instance("a");
    b.register_instance("b");
    ASSERT_EQ(a.claim_due("a", now_ms() + 60s, 10, 60s).size(), 1u);
    sql("UPDATE instances SET heartbeat_at = now() - interval '5 seconds' WHERE id = 'a'");
    beating_for_a_while("b");
    pqxx::connection holder(pg_url_);
    pqxx::work hold(holder);
    hold.exec("SELECT 1 FROM " + hold.quote_name(schema_) + ".instances WHERE id = 'a' FOR UPDATE");
    auto beat = std::async(std::launch::async, [&] { return b.heartbeat("b", 3000ms, 2000ms); });
    const bool beat_ended = beat.wait_for(5s) == std::future_status::ready;
    if (!beat_ended) hold.abort();  // else the future's destructor would wait for ever
    ASSERT_TRUE(beat_ended) << "the heartbeat waited on the registration another transaction holds";
    EXPECT_EQ(beat.get().dead, std::vector<std::string>{"a"});
    EXPECT_EQ(b.claim_due("b", now_ms() + 60s, 10, 60s).size(), 1u) << "the fenced owner's run";
    EXPECT_EQ(count("SELECT count(*) FROM instances WHERE id = 'a'"), 1) << "its row was locked";
    hold.abort();
    EXPECT_FALSE(a.heartbeat("a", 3000ms, 2000ms).registered) << "fenced, yet beat on";
    // The next beat of "b" deletes the registration; the fence stays until "a" registers
    // again, and until then a claim of "a" (sent before it learnt of the fence) takes nothing.
    b.heartbeat("b", 3000ms, 2000ms);
    EXPECT_EQ(count("SELECT count(*) FROM instances WHERE id = 'a'"), 0);
    sql("INSERT INTO jobs (id, routing_key, due_at, body, properties) "
        "VALUES ('after-fence', 'jobs.test', now() + interval '30 seconds', '\\x00', '{}')");
    EXPECT_TRUE(a.claim_due("a", now_ms() + 60s, 10, 60s).empty()) << "a fenced instance claimed";
    a.register_instance("a");
    EXPECT_EQ(count("SELECT count(*) FROM instance_fences"), 0);
    EXPECT_TRUE(a.heartbeat("a", 3000ms, 2000ms).registered);
    EXPECT_EQ(a.claim_due("a", now_ms() + 60s, 10, 60s).size(), 1u);
}

// Every hourglass session bounds its waits (docs/operating.md "Stalls"): before, none did, so
// any statement that met a lock held by a stalled session waited without bound, and a session
// cut mid-transaction kept its locks until TCP noticed, hours later.
TEST_F(Fencing, every_session_bounds_its_lock_waits_statements_and_idle_transactions) {
    store::migrate(*db_, schema_, false);
    store::JobStore store({pg_url_, schema_});
    // The settings of the store's own session, read through it.
    std::string own;
    for (const auto& name : {"lock_timeout", "statement_timeout",
                             "idle_in_transaction_session_timeout", "tcp_keepalives_idle"}) {
        own += std::string(own.empty() ? "" : " ") + name + "=" + store.session_setting(name);
    }
    EXPECT_EQ(own, "lock_timeout=2s statement_timeout=5min "
                   "idle_in_transaction_session_timeout=1min tcp_keepalives_idle=1");
    // A beat that meets its own registration held by another transaction fails within the
    // bound (the thread reconnects and beats again), instead of waiting for that transaction.
    store.register_instance("a");
    pqxx::connection holder(pg_url_);
    pqxx::work hold(holder);
    hold.exec("SELECT 1 FROM " + hold.quote_name(schema_) + ".instances WHERE id = 'a' FOR UPDATE");
    auto beat = std::async(std::launch::async, [&] { return store.heartbeat("a", 3000ms, 2000ms); });
    const bool ended = beat.wait_for(5s) == std::future_status::ready;
    if (!ended) hold.abort();
    ASSERT_TRUE(ended) << "a beat waited for a lock without bound";
    EXPECT_THROW(beat.get(), std::exception);
}

// The stall that released a held burst twice: two instances, 2,000 jobs due at one instant held
// in memory by one of them past their lease, and 20 s before their due time a transaction
// holds every registration for 5 s (in production: a checkpoint stall, a failover, an
// operator's forgotten transaction). The other instance's claim took the leases of the
// silent-but-alive owner without fencing it, and both released every job.
TEST_F(Fencing, a_stall_of_every_heartbeat_releases_a_held_burst_once) {
    start_hourglass({"--horizon", "60s", "--lease", "5s"});
    start_hourglass({"--horizon", "60s", "--lease", "5s"});
    Client receiver(amqp_url_);
    receiver.subscribe(out_exchange(), "#");
    constexpr int kJobs = 2000;
    const auto due = now_ms() + 30s;
    Client(amqp_url_).publish_all(scheduled_series("stalled-", kJobs, due));
    ASSERT_TRUE(eventually("SELECT count(*) FROM jobs WHERE lease_owner IS NOT NULL",
                           std::to_string(kJobs), 10s));
    // Held past the lease (5 s + the ladder's step): the claim path sees expired leases.
    std::this_thread::sleep_until(due - 22s);
    {
        pqxx::connection holder(pg_url_);
        pqxx::work hold(holder);
        hold.exec("SELECT 1 FROM " + hold.quote_name(schema_) + ".instances FOR UPDATE");
        std::this_thread::sleep_for(5s);
    }
    std::this_thread::sleep_until(due - 1s);
    const auto seen = per_job(receiver.drain(5000ms, 30s), "stalled-");
    std::cout << "[every heartbeat stalled 5 s] jobs " << kJobs << ", released " << seen.size()
              << ", duplicates " << duplicates(seen) << "\n";
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(kJobs));
    EXPECT_EQ(duplicates(seen), 0);
}

// The duplicate the fault campaign found (docs/guarantees.md): an instance published a burst
// inside its grace, its record of the hand-over waited for rows another transaction held, its
// heartbeat fell behind, and another instance fenced it and gave its claims back: the runs were
// claimed and published again, while the record that would have said "published" still
// waited. A fence now gives back nothing of an instance whose session is still open (its
// record may yet commit); the fenced instance gives back itself what it never published, and
// once its sessions end (a crash, a cut network) any live instance's beat gives back the rest.
TEST_F(Fencing, a_fenced_instance_still_connected_keeps_its_claims_for_its_record) {
    store::migrate(*db_, schema_, false);
    store::JobStore a({pg_url_, schema_, nullptr, false, "a"});  // named after "a", as its loader's
    store::JobStore b({pg_url_, schema_, nullptr, false, "b"});
    sql("INSERT INTO jobs (id, routing_key, due_at, body, properties) VALUES "
        "('published', 'jobs.test', now() + interval '30 seconds', '\\x00', '{}'), "
        "('unpublished', 'jobs.test', now() + interval '30 seconds', '\\x00', '{}')");
    a.register_instance("a");
    b.register_instance("b");
    ASSERT_EQ(a.claim_due("a", now_ms() + 60s, 10, 1ms).size(), 2u);
    std::this_thread::sleep_for(20ms);  // past the lease: only the ownership rule keeps them
    sql("UPDATE instances SET heartbeat_at = now() - interval '5 seconds' WHERE id = 'a'");
    beating_for_a_while("b");
    EXPECT_EQ(b.heartbeat("b", 3000ms, 2000ms).dead, std::vector<std::string>{"a"});
    EXPECT_EQ(count("SELECT count(*) FROM jobs WHERE lease_owner = 'a'"), 2)
        << "gave back the claims of an instance whose record may still commit";
    EXPECT_TRUE(b.claim_due("b", now_ms() + 60s, 10, 60s).empty()) << "took a connected owner's runs";
    // "a"'s record of the run it published commits; it learns of the fence at its next beat
    // and gives back what it never published.
    EXPECT_TRUE(a.record_handed_over("a", {HandedOverRun{.id = "published", .run = 1}}).empty());
    EXPECT_EQ(count("SELECT count(*) FROM jobs WHERE id = 'published' AND state = 'enqueued'"), 1);
    EXPECT_FALSE(a.heartbeat("a", 3000ms, 2000ms).registered);
    EXPECT_TRUE(a.release_claims("a", {"unpublished"}).empty());
    const auto taken = b.claim_due("b", now_ms() + 60s, 10, 60s);
    ASSERT_EQ(taken.size(), 1u);
    EXPECT_EQ(taken[0].id, "unpublished") << "the published run was taken again";
}

TEST_F(Fencing, the_claims_of_a_fenced_instance_go_once_its_sessions_end) {
    store::migrate(*db_, schema_, false);
    auto a = std::make_unique<store::JobStore>(store::StoreOptions{pg_url_, schema_, nullptr, false, "a"});
    store::JobStore b({pg_url_, schema_, nullptr, false, "b"});
    sql("INSERT INTO jobs (id, routing_key, due_at, body, properties) "
        "VALUES ('held', 'jobs.test', now() + interval '30 seconds', '\\x00', '{}')");
    a->register_instance("a");
    b.register_instance("b");
    ASSERT_EQ(a->claim_due("a", now_ms() + 60s, 10, 1ms).size(), 1u);
    sql("UPDATE instances SET heartbeat_at = now() - interval '5 seconds' WHERE id = 'a'");
    beating_for_a_while("b");
    EXPECT_EQ(b.heartbeat("b", 3000ms, 2000ms).dead, std::vector<std::string>{"a"});
    EXPECT_TRUE(b.claim_due("b", now_ms() + 60s, 10, 60s).empty());
    a.reset();  // "a" dies: its session ends
    ASSERT_TRUE(eventually("SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                           "'hourglass ' || md5('a')", "0", 5s));
    beating_for_a_while("b");
    b.heartbeat("b", 3000ms, 2000ms);
    EXPECT_EQ(b.claim_due("b", now_ms() + 60s, 10, 60s).size(), 1u) << "a dead instance's run stayed leased";
}

// A transaction holds the registration of an instance that others fenced (an operator's
// SELECT ... FOR UPDATE): its beats, which update that row, fail on their lock timeout. It
// still learns of the fence at its next beat, and gives back what it holds, instead of keeping
// it until the transaction ends.
TEST_F(Fencing, a_fenced_instance_whose_registration_is_locked_learns_of_the_fence) {
    store::migrate(*db_, schema_, false);
    store::JobStore a({pg_url_, schema_, nullptr, false, "a"});
    store::JobStore b({pg_url_, schema_, nullptr, false, "b"});
    a.register_instance("a");
    b.register_instance("b");
    sql("UPDATE instances SET heartbeat_at = now() - interval '5 seconds' WHERE id = 'a'");
    beating_for_a_while("b");
    pqxx::connection holder(pg_url_);
    pqxx::work hold(holder);
    hold.exec("SELECT 1 FROM " + hold.quote_name(schema_) + ".instances WHERE id = 'a' FOR UPDATE");
    EXPECT_EQ(b.heartbeat("b", 3000ms, 2000ms).dead, std::vector<std::string>{"a"});
    auto beat = std::async(std::launch::async, [&] { return a.heartbeat("a", 3000ms, 2000ms); });
    const bool ended = beat.wait_for(1s) == std::future_status::ready;
    if (!ended) hold.abort();
    ASSERT_TRUE(ended) << "the fenced instance's beat waited for its locked registration";
    EXPECT_FALSE(beat.get().registered);
}

}  // namespace
}  // namespace hourglass::testing
