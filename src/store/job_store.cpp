#include "store/job_store.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <pqxx/pqxx>
#include <set>
#include <unordered_map>

#include "common/mask.hpp"
#include "common/text.hpp"
#include "hourglass/properties_json.hpp"
#include "store/apply_in.hpp"
#include "store/errors.hpp"
#include "store/job_rows.hpp"
#include "store/migrations.hpp"

namespace hourglass::store {

using nlohmann::json;

namespace {

// A claimed job's release: epoch milliseconds of a timestamptz column are exact (extract()
// is numeric on PG 14+); the run number is the next run, or the same run again for a run
// handed over but never observed (re-sent).
constexpr const char* kClaimedRunColumns =
    "j.id, j.routing_key, j.exchange, floor(extract(epoch FROM j.due_at) * 1000)::bigint, "
    "j.runs + CASE WHEN j.state = 'enqueued' THEN 0 ELSE 1 END, j.body, j.properties::text, j.cron, j.cron_tz, "
    "floor(extract(epoch FROM j.cron_until) * 1000)::bigint, j.cron_limit, j.state = 'enqueued'";

constexpr const char* kJobRecordset =
    "jsonb_to_recordset($1::jsonb) AS x(id text, routing_key text, exchange text, "
    "due_at timestamptz, accepted_at timestamptz, body text, properties jsonb, cron text, "
    "cron_tz text, cron_until timestamptz, cron_limit integer, leased boolean, "
    "expires_after_ms bigint, cron_catchup text)";

// How long ingest's transactions and the loader's and the audit's records wait for a row lock
// another transaction holds. Their own locks last a statement; a longer one is an operator's
// (a transaction left open), which must hold up only the jobs whose rows it holds.
constexpr const char* kBriefRowLockWait = "SET LOCAL lock_timeout = '250ms'";

TimePoint time_of(const pqxx::field& field) { return from_epoch_ms(field.as<std::int64_t>()); }

std::optional<TimePoint> optional_time_of(const pqxx::field& field) {
    if (field.is_null()) return std::nullopt;
    return time_of(field);
}

void prepare_statements(pqxx::connection& c) {
    // Rows marked `leased` are claimed at insert by the loader $2 for $3 ms (NULL $2: none).
    c.prepare("insert_jobs",
              std::string("INSERT INTO jobs (id, routing_key, exchange, due_at, accepted_at, body, "
                          "properties, cron, cron_tz, cron_until, cron_limit, expires_after_ms, "
                          "cron_catchup, lease_owner, lease_until) "
                          "SELECT x.id, x.routing_key, x.exchange, x.due_at, x.accepted_at, "
                          "decode(x.body, 'base64'), x.properties, x.cron, x.cron_tz, "
                          "x.cron_until, x.cron_limit, x.expires_after_ms, x.cron_catchup, "
                          "CASE WHEN x.leased THEN $2::text END, "
                          "CASE WHEN x.leased AND $2::text IS NOT NULL "
                          "     THEN now() + $3 * interval '1 millisecond' END FROM ") +
                  kJobRecordset + " ON CONFLICT (id) DO NOTHING RETURNING id, lease_owner IS NOT NULL");
    c.prepare("due_of_ids",
              "SELECT id, floor(extract(epoch FROM due_at) * 1000)::bigint FROM jobs "
              "WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb))");
    c.prepare("lock_job",
              "SELECT state, lease_owner IS NOT NULL, cron IS NOT NULL, "
              "floor(extract(epoch FROM due_at) * 1000)::bigint FROM jobs WHERE id = $1 "
              "FOR UPDATE");
    c.prepare("replace_job",
              std::string("UPDATE jobs j SET routing_key = x.routing_key, exchange = x.exchange, "
                          "due_at = x.due_at, accepted_at = x.accepted_at, "
                          "body = decode(x.body, 'base64'), properties = x.properties, "
                          "cron = x.cron, cron_tz = x.cron_tz, cron_until = x.cron_until, "
                          "cron_limit = x.cron_limit, expires_after_ms = x.expires_after_ms, "
                          "cron_catchup = x.cron_catchup, paused_at = NULL, "
                          "expired_at = NULL, state = 'pending', lease_owner = NULL, "
                          "lease_until = NULL, updated_at = now() FROM ") +
                  kJobRecordset + " WHERE j.id = x.id");
    c.prepare("cancel_job",
              "UPDATE jobs SET state = 'cancelled', paused_at = NULL, updated_at = now() "
              "WHERE id = $1");
    c.prepare("pause_job",
              "UPDATE jobs SET state = 'paused', paused_at = now(), updated_at = now() "
              "WHERE id = $1");
    c.prepare("resume_job",
              "UPDATE jobs SET state = 'pending', paused_at = NULL, updated_at = now() "
              "WHERE id = $1");
    // One batch of a cancel by prefix: the next $4 jobs after ($2, $3) in (routing_key, id)
    // order among those whose key starts with $1 (below $5, if any, the first string after
    // every extension of $1), read from jobs_routing_key_id; of them, those a cancel command
    // would cancel (reference §3.2) and no other transaction holds are cancelled. Returns the
    // count cancelled, the rows read and the last row's key and id, where the next batch starts.
    c.prepare("cancel_prefix_batch",
              "WITH scanned AS (SELECT id, routing_key FROM jobs "
              "  WHERE (routing_key COLLATE \"C\", id) > ($2::text COLLATE \"C\", $3::text) "
              "  AND routing_key COLLATE \"C\" >= $1::text "
              "  AND ($5::text IS NULL OR routing_key COLLATE \"C\" < $5::text) "
              "  ORDER BY routing_key COLLATE \"C\", id LIMIT $4), "
              "cancellable AS (SELECT j.id FROM jobs j JOIN scanned s ON s.id = j.id "
              "  WHERE j.state = 'paused' OR (j.state = 'pending' AND "
              "        (j.lease_owner IS NULL OR j.cron IS NOT NULL)) "
              "  FOR UPDATE OF j SKIP LOCKED), "
              "cancelled AS (UPDATE jobs j SET state = 'cancelled', paused_at = NULL, "
              "  updated_at = now() FROM cancellable c WHERE j.id = c.id RETURNING 1) "
              "SELECT (SELECT count(*) FROM cancelled), (SELECT count(*) FROM scanned), "
              "  last.routing_key, last.id FROM (SELECT 1) AS one LEFT JOIN LATERAL "
              "  (SELECT routing_key, id FROM scanned "
              "   ORDER BY routing_key COLLATE \"C\" DESC, id DESC LIMIT 1) AS last ON true");
    // A candidate run: its id, due time and bytes (body and properties as stored; neither is
    // read for it, their sizes are in their headers).
    const std::string candidate =
        "SELECT id, due_at, octet_length(body) + pg_column_size(properties) AS bytes FROM jobs ";
    c.prepare("claim_due",
              "WITH fresh AS (" + candidate +
                  "  WHERE state = 'pending' AND lease_owner IS NULL "
                  "  AND due_at <= $2 ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED), "
                  // A lease past lease_until whose owner does not beat (migration 007, 3 s
                  // is kTakeoverAfter): a live owner's claims never expire under it.
                  "expired AS (" +
                  candidate +
                  "  j WHERE lease_owner IS NOT NULL AND lease_until < now() "
                  "  AND lease_owner <> $1 AND state = 'pending' "
                  "  AND NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = j.lease_owner "
                  "                  AND i.heartbeat_at >= now() - interval '3 seconds') "
                  "  ORDER BY lease_until LIMIT $3 FOR UPDATE SKIP LOCKED), "
                  // One-shot runs handed over but not observed long after they were due (and
                  // after they were last handed over): the broker lost them (see
                  // resend_due_before). NULL $5 turns this off. Runs handed over with the
                  // audit off were never to be observed (migration 009).
                  // Nor runs whose release, or their group's, is parked (migration 012): it
                  // was observed, and is recorded once another transaction's lock ends.
                  "unobserved AS (" +
                  candidate +
                  "  u WHERE state = 'enqueued' AND due_at < $5 "
                  "  AND enqueued_at < $5 AND audited "
                  // A resend claimed by a live owner stays its own however long its publish
                  // takes (a memory alarm), as any claim (3 s is kTakeoverAfter).
                  "  AND (lease_owner IS NULL OR (lease_until < now() AND lease_owner <> $1 "
                  "       AND NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = u.lease_owner "
                  "                       AND i.heartbeat_at >= now() - interval '3 seconds'))) "
                  "  AND NOT EXISTS (SELECT 1 FROM parked_releases p "
                  "                  WHERE p.job_id = u.id AND p.run = u.runs) "
                  "  AND NOT EXISTS (SELECT 1 FROM parked_releases p WHERE "
                  "    p.job_id = u.observed_with_id AND p.run = u.observed_with_run) "
                  "  ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED), "
                  "candidates AS (SELECT * FROM fresh UNION ALL SELECT * FROM expired "
                  "               UNION ALL SELECT * FROM unobserved), "
                  // Earliest first, $3 runs at most, and none once the bytes of those before
                  // it reach the budget $6 (the first is always taken). The other candidates
                  // stay unclaimed: their row locks end with this transaction.
                  "taken AS (SELECT id FROM (SELECT id, due_at, "
                  "  sum(bytes) OVER (ORDER BY due_at, id) - bytes AS bytes_before "
                  "  FROM candidates) c WHERE bytes_before < $6 ORDER BY due_at, id LIMIT $3) "
                  "UPDATE jobs j SET lease_owner = $1, "
                  "lease_until = now() + $4 * interval '1 millisecond', updated_at = now() "
                  "WHERE j.id IN (SELECT id FROM taken) "
                  "RETURNING " +
                  kClaimedRunColumns + ", (SELECT count(*) FROM candidates), " +
                  // Members of a release group handed over with this run as their last: it
                  // was given back (or is re-sent), and must take its own audit copy.
                  "EXISTS (SELECT 1 FROM jobs c WHERE c.observed_with_id = j.id "
                  "        AND c.state = 'enqueued' AND c.observed_with_run = "
                  "        j.runs + CASE WHEN j.state = 'enqueued' THEN 0 ELSE 1 END), "
                  "j.expires_after_ms, j.cron_catchup");
    // Runs observed with another (release groups, migration 010) end `done` here when that
    // run's release was recorded first (a release can beat its hand-over's commit).
    c.prepare("record_handed_over",
              "UPDATE jobs j SET runs = x.run, updated_at = now(), "
              "expired_at = CASE WHEN x.expired THEN now() ELSE j.expired_at END, "
              // When it was published: a record can come after the release itself.
              "enqueued_at = COALESCE(to_timestamp(x.handed_ms / 1000.0), now()), "
              "audited = x.audited, observed_with_id = x.with_id, observed_with_run = x.with_run, "
              "lease_owner = NULL, lease_until = NULL, due_at = COALESCE(x.next_due, j.due_at), "
              "released_at = CASE WHEN w.released_run >= x.with_run THEN w.released_at "
              "                   ELSE j.released_at END, "
              "released_run = CASE WHEN w.released_run >= x.with_run THEN x.run "
              "                    ELSE j.released_run END, "
              "lateness_ms = CASE WHEN w.released_run >= x.with_run THEN extract(epoch FROM "
              "              w.released_at - GREATEST(j.due_at, j.accepted_at)) * 1000 "
              "                   ELSE j.lateness_ms END, "
              "state = CASE WHEN j.state = 'cancelled' THEN 'cancelled' "
              // Paused with a run in flight: stays paused, at its next run.
              "             WHEN j.state = 'paused' AND x.next_due IS NOT NULL THEN 'paused' "
              "             WHEN x.next_due IS NOT NULL THEN 'pending' "
              // Sent to <prefix>.expired: ended, with nothing to observe.
              "             WHEN x.expired THEN 'done' "
              "             WHEN COALESCE(j.released_run, 0) >= x.run THEN 'done' "
              "             WHEN w.released_run >= x.with_run THEN 'done' "
              "             ELSE 'enqueued' END "
              "FROM jsonb_to_recordset($2::jsonb) AS x(id text, run integer, next_due timestamptz, "
              "     audited boolean, with_id text, with_run integer, handed_ms bigint, "
              "     expired boolean) "
              "LEFT JOIN jobs w ON w.id = x.with_id "
              // IS NOT DISTINCT FROM, not =, for the owner (never NULL here) here and in
              // release_claims: an equality lets the planner pick the partial index of leased
              // rows, which its statistics, taken before a hotspot, think nearly empty; it then
              // read every run claimed (50,000 in a hotspot) to record 1,000 (57 ms, 15 ms by id).
              "WHERE j.id = x.id AND j.lease_owner IS NOT DISTINCT FROM $1 "
              "AND j.runs IN (x.run - 1, x.run)");
    // The loader (hand-over) and the audit (release) each lock the runs whose release the audit
    // observes before anything else (the loader: its runs observed alone and the runs the
    // others are observed with): whichever commits second sees the other's work, so a group's
    // runs end `done` whatever the order. They lock in id order, so the two cannot deadlock;
    // past a brief wait (record_around_locks) each takes the rows it can and leaves the rest.
    c.prepare("lock_observed_runs",
              "SELECT id FROM jobs WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb)) "
              "ORDER BY id FOR UPDATE");
    c.prepare("lock_unless_locked",
              "SELECT id FROM jobs WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb)) "
              "ORDER BY id FOR UPDATE SKIP LOCKED");
    // Of rows a lock skipped, those that exist: another transaction holds them (or they are
    // gone, and nothing waits for them).
    c.prepare("existing_ids",
              "SELECT id FROM jobs WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb))");
    // Fencing (docs/architecture.md "Fencing"): only the owner inserts its row, and only at
    // start or after it dropped what it held; a beat only updates it, so a beat that finds no
    // row knows it was taken for dead. Stamped with clock_timestamp(), not now(): a beat held
    // up by a stall is stamped when it runs, not when its transaction began. Returns the
    // previous beat's age in ms (a taker must have beaten recently itself).
    c.prepare("register_instance",
              "INSERT INTO instances (id, heartbeat_at) VALUES ($1, clock_timestamp()) "
              "ON CONFLICT (id) DO UPDATE SET heartbeat_at = clock_timestamp()");
    c.prepare("heartbeat",
              "UPDATE instances i SET heartbeat_at = clock_timestamp() "
              "FROM (SELECT heartbeat_at AS previous FROM instances WHERE id = $1 FOR UPDATE) p "
              "WHERE i.id = $1 "
              "RETURNING extract(epoch FROM clock_timestamp() - p.previous) * 1000");
    c.prepare("forget_dead_instances",
              "DELETE FROM instances "
              "WHERE heartbeat_at < clock_timestamp() - $2 * interval '1 millisecond' "
              "AND id <> $1 RETURNING id");
    // Orphaned claims: lease_until is the claim's time + the lease it was given.
    c.prepare("claims_older_than",
              "SELECT id FROM jobs WHERE lease_owner IS NOT DISTINCT FROM $1 "
              "AND lease_until < now() + ($2::bigint - $3::bigint) * interval '1 millisecond'");
    c.prepare("release_orphaned_claims",
              "UPDATE jobs SET lease_owner = NULL, lease_until = NULL, updated_at = now() "
              "WHERE lease_owner IS NOT DISTINCT FROM $1 "
              "AND id IN (SELECT jsonb_array_elements_text($2::jsonb)) "
              "AND lease_until < now() + ($3::bigint - $4::bigint) * interval '1 millisecond'");
    // Rows another transaction holds keep their lease: claim_due takes it over once it ends
    // (lease_until), since its owner no longer beats. Waiting here would hold up a clean stop,
    // or every heartbeat, for as long as an operator's transaction stays open.
    c.prepare("release_claims_of_owners",
              "UPDATE jobs SET lease_owner = NULL, lease_until = NULL, updated_at = now() "
              "WHERE id IN (SELECT id FROM jobs WHERE lease_owner IS NOT NULL "
              "AND lease_owner IN (SELECT jsonb_array_elements_text($1::jsonb)) "
              "FOR UPDATE SKIP LOCKED)");
    c.prepare("leave", "DELETE FROM instances WHERE id = $1");
    c.prepare("release_claims",
              "UPDATE jobs SET lease_owner = NULL, lease_until = NULL, updated_at = now() "
              "WHERE lease_owner IS NOT DISTINCT FROM $1 "
              "AND id IN (SELECT jsonb_array_elements_text($2::jsonb))");
    // The observed runs ($1: id, run) whose group has a run another transaction holds; locks
    // the others' runs. Only a transaction that holds a group's observed run adds runs to it
    // (record_handed_over), so the runs read here are all the group has.
    // Recurring runs (migration 013) whose row moved on are in a group until its release is
    // recorded: their released_run is behind their run.
    c.prepare("lock_group_runs",
              "WITH members AS (SELECT c.id, x.id AS observed "
              "  FROM jsonb_to_recordset($1::jsonb) AS x(id text, run integer) "
              "  JOIN jobs c ON c.observed_with_id = x.id AND c.observed_with_run = x.run "
              "  WHERE c.state = 'enqueued' "
              "  UNION ALL SELECT c.id, x.id AS observed "
              "  FROM jsonb_to_recordset($1::jsonb) AS x(id text, run integer) "
              "  JOIN jobs c ON c.observed_with_id = x.id AND c.observed_with_run = x.run "
              "  WHERE c.cron IS NOT NULL AND c.observed_with_id IS NOT NULL "
              "  AND COALESCE(c.released_run, 0) < c.runs), "
              "locked AS (SELECT id FROM jobs WHERE id IN (SELECT id FROM members) "
              "  FOR UPDATE SKIP LOCKED) "
              "SELECT DISTINCT observed FROM members WHERE id NOT IN (SELECT id FROM locked)");
    // The releases observed ($1), and the rest of each one's release group (migration 010),
    // released before it, in one statement: a record is about a hundred releases every 100 ms,
    // and each statement costs PostgreSQL its round trip, its plan and the count trigger
    // whether it finds rows or not (the group updates find none in a steady load).
    // A recurring run of a group (migration 013) whose row has moved on to the next run (its
    // due_at, its state) gets only its release, late by how long after the group's due time
    // (every run of a group shares it) it came. The three updates take disjoint rows: one
    // statement updates a row once.
    c.prepare("record_releases",
              "WITH x AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(id text, run integer, "
              "    due_ms bigint, released_us bigint)), "
              "observed AS (UPDATE jobs j SET released_at = to_timestamp(x.released_us / 1000000.0), "
              "  released_run = GREATEST(COALESCE(j.released_run, 0), x.run), "
              "  lateness_ms = extract(epoch FROM to_timestamp(x.released_us / 1000000.0) - "
              "                GREATEST(to_timestamp(x.due_ms / 1000.0), j.accepted_at)) * 1000, "
              "  state = CASE WHEN j.state = 'enqueued' AND j.runs <= x.run THEN 'done' "
              "               ELSE j.state END, updated_at = now() "
              "  FROM x WHERE j.id = x.id RETURNING j.lateness_ms), "
              "grouped AS (UPDATE jobs c SET released_at = to_timestamp(x.released_us / 1000000.0), "
              "  released_run = c.runs, state = 'done', updated_at = now(), "
              "  lateness_ms = extract(epoch FROM to_timestamp(x.released_us / 1000000.0) - "
              "                GREATEST(c.due_at, c.accepted_at)) * 1000 "
              "  FROM x WHERE c.observed_with_id = x.id AND c.observed_with_run = x.run "
              "  AND c.state = 'enqueued' AND c.id NOT IN (SELECT id FROM x) "
              "  RETURNING c.lateness_ms), "
              "recurring AS (UPDATE jobs c SET released_at = to_timestamp(x.released_us / 1000000.0), "
              "  released_run = c.runs, updated_at = now(), "
              "  lateness_ms = extract(epoch FROM to_timestamp(x.released_us / 1000000.0) - "
              "                GREATEST(to_timestamp(x.due_ms / 1000.0), c.accepted_at)) * 1000 "
              "  FROM x WHERE c.observed_with_id = x.id AND c.observed_with_run = x.run "
              "  AND c.cron IS NOT NULL AND c.observed_with_id IS NOT NULL "
              "  AND COALESCE(c.released_run, 0) < c.runs AND c.state <> 'enqueued' "
              "  AND c.id NOT IN (SELECT id FROM x) RETURNING c.lateness_ms) "
              "SELECT lateness_ms FROM observed UNION ALL SELECT lateness_ms FROM grouped "
              "UNION ALL SELECT lateness_ms FROM recurring");
    // Releases parked while another transaction held their rows (migration 012). The
    // records of the parked take them oldest first and skip those another audit is recording.
    c.prepare("park_releases",
              "INSERT INTO parked_releases (job_id, run, due_at, released_at) "
              "SELECT x.id, x.run, to_timestamp(x.due_ms / 1000.0), "
              "to_timestamp(x.released_us / 1000000.0) "
              "FROM jsonb_to_recordset($1::jsonb) AS x(id text, run integer, due_ms bigint, "
              "released_us bigint) ON CONFLICT (job_id, run) DO NOTHING");
    c.prepare("parked_releases",
              "SELECT job_id, run, floor(extract(epoch FROM due_at) * 1000)::bigint, "
              "floor(extract(epoch FROM released_at) * 1000000)::bigint FROM parked_releases "
              "ORDER BY parked_at, job_id, run LIMIT $1 FOR UPDATE SKIP LOCKED");
    c.prepare("forget_parked_releases",
              "DELETE FROM parked_releases p USING jsonb_to_recordset($1::jsonb) "
              "AS x(id text, run integer) WHERE p.job_id = x.id AND p.run = x.run");
    c.prepare("count_parked_releases", "SELECT count(*) FROM parked_releases");
    c.prepare("live_instances",
              "SELECT count(*) FROM instances "
              "WHERE heartbeat_at >= now() - $1 * interval '1 millisecond'");
    // The SQL intake's backlog, counted up to a bound (its primary key: a read of the index).
    constexpr const char* kCountColumns =
        "pending, enqueued, done, cancelled, oldest_pending_lag_ms, "
        "floor(extract(epoch FROM next_due_at) * 1000)::bigint, paused, "
        "(SELECT count(*) FROM (SELECT 1 FROM commands LIMIT 100001) AS waiting)";
    constexpr const char* kLatenessColumns = "lateness_p50_ms, lateness_p99_ms, lateness_max_ms";
    c.prepare("stats", std::string("SELECT ") + kCountColumns + ", " + kLatenessColumns +
                           " FROM stats");
    c.prepare("stats_counts", std::string("SELECT ") + kCountColumns + " FROM stats_counts");
    c.prepare("stats_lateness",
              std::string("SELECT ") + kLatenessColumns + " FROM stats_lateness");
    // The ended rows of one-shot jobs, oldest first, from the partial index of migration 006.
    // Not a run that handed-over runs of its release group are still observed with (their
    // record came after its release, held up by a lock): they end `done` through its row.
    constexpr const char* kEndedBefore =
        "state IN ('done', 'cancelled') AND cron IS NULL "
        "AND updated_at < now() - $1 * interval '1 millisecond' "
        "AND NOT EXISTS (SELECT 1 FROM jobs c WHERE c.observed_with_id = jobs.id "
        "                AND c.state = 'enqueued')";
    c.prepare("prune_ended",
              std::string("WITH doomed AS (SELECT id FROM jobs WHERE ") + kEndedBefore +
                  " ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED) "
                  "DELETE FROM jobs j USING doomed d WHERE j.id = d.id");
    // The oldest rejections first (by id, the primary key): past the retention, or beyond the
    // newest $3. The scan stops at $2 rows and reads at most the table, which $3 bounds.
    c.prepare("prune_rejections",
              "DELETE FROM rejections WHERE id IN (SELECT id FROM rejections "
              "WHERE rejected_at < now() - $1 * interval '1 millisecond' "
              "OR id <= COALESCE((SELECT id FROM rejections ORDER BY id DESC OFFSET $3 LIMIT 1), 0) "
              "ORDER BY id LIMIT $2)");
    c.prepare("record_rejections",
              "INSERT INTO rejections (job_id, routing_key, reason) SELECT x.job_id, "
              "x.routing_key, x.reason FROM jsonb_to_recordset($1::jsonb) "
              "AS x(job_id text, routing_key text, reason text)");
    c.prepare("count_prunable", std::string("SELECT count(*) FROM jobs WHERE ") + kEndedBefore);
    // The SQL intake's receipts (migration 018), the oldest first, by command_receipts_decided_at.
    c.prepare("prune_receipts",
              "DELETE FROM command_receipts WHERE command_id IN (SELECT command_id FROM "
              "command_receipts WHERE decided_at < now() - $1 * interval '1 millisecond' "
              "ORDER BY decided_at LIMIT $2)");
    c.prepare("table_bytes", "SELECT pg_total_relation_size('jobs')");
    c.prepare("next_claimable_due",
              "SELECT floor(extract(epoch FROM min(due_at)) * 1000)::bigint FROM jobs "
              "WHERE state = 'pending' AND lease_owner IS NULL");
    prepare_sql_command_statements(c);
}

CommandOutcome schedule_one(pqxx::work& tx, const ScheduleCommand& job) {
    const json rows = json::array({job_row(job)});
    const auto existing = tx.exec_prepared("lock_job", job.id);
    if (existing.empty()) {
        tx.exec_prepared("insert_jobs", rows.dump(), std::optional<std::string>{}, 0);
        return {CommandStatus::scheduled, job.due_at, {}, false};
    }
    const auto state = existing[0][0].as<std::string>();
    const bool leased = existing[0][1].as<bool>();
    const auto current_due = time_of(existing[0][3]);
    if (!job.replace) return {CommandStatus::duplicate, current_due, {}};
    // reference §3.1: a run due within the horizon belongs to the delay topology.
    if (state == "enqueued" || (state == "pending" && leased)) {
        return {CommandStatus::too_late, current_due, {}};
    }
    tx.exec_prepared("replace_job", rows.dump());
    return {CommandStatus::replaced, job.due_at, {}};
}

CommandOutcome cancel_one(pqxx::work& tx, const CancelCommand& cancel) {
    const auto existing = tx.exec_prepared("lock_job", cancel.id);
    if (existing.empty()) return {CommandStatus::not_found, std::nullopt, {}};
    const auto state = existing[0][0].as<std::string>();
    const bool leased = existing[0][1].as<bool>();
    const bool recurring = existing[0][2].as<bool>();
    const auto due = time_of(existing[0][3]);
    if (state == "cancelled") return {CommandStatus::cancelled, due, {}};
    if ((state == "pending" && !leased) || state == "paused") {
        tx.exec_prepared("cancel_job", cancel.id);
        return {CommandStatus::cancelled, due, {}};
    }
    // A recurring job stops for good, even with a run in flight, which is still released
    // (reference §3.2). Its last run already handed over (enqueued) or done: too late.
    if (recurring && state == "pending") {
        tx.exec_prepared("cancel_job", cancel.id);
        return {CommandStatus::cancelled, due, {}};
    }
    return {CommandStatus::too_late, due, {}};
}

// Pause and resume (reference §3.3): only a recurring job that has not ended.
CommandOutcome pause_one(pqxx::work& tx, const PauseCommand& command) {
    const auto existing = tx.exec_prepared("lock_job", command.id);
    if (existing.empty()) return {CommandStatus::not_found, std::nullopt, {}};
    const auto state = existing[0][0].as<std::string>();
    const bool recurring = existing[0][2].as<bool>();
    const auto due = time_of(existing[0][3]);
    const auto done = command.pause ? CommandStatus::paused : CommandStatus::resumed;
    if (!recurring) {
        return {CommandStatus::rejected, due,
                std::string(command.pause ? "x-pause" : "x-resume") + ": job " +
                    quote_value(command.id, 64) + " is not recurring (only x-cron jobs pause)"};
    }
    if (state == "cancelled" || state == "done" || state == "enqueued") {
        return {CommandStatus::too_late, due, {}};
    }
    // A run already claimed (within the horizon) is still released, as with a cancel; the
    // job pauses after it. Resumed, the run at due_at (past, if runs were missed meanwhile)
    // is claimed as any other, and x-cron-catchup decides what the missed runs become.
    if (command.pause && state == "pending") tx.exec_prepared("pause_job", command.id);
    if (!command.pause && state == "paused") tx.exec_prepared("resume_job", command.id);
    return {done, due, {}};
}

// Cancels in batches (kCancelPrefixBatch rows read per statement, so a statement's time and
// locks stay bounded however many jobs share the prefix), all in the batch's transaction: the
// receipt's count is exact and a redelivered command cancels nothing twice.
CommandOutcome cancel_prefix(pqxx::work& tx, const CancelPrefixCommand& command) {
    const auto upper = prefix_upper_bound(command.prefix);
    std::string after_key = command.prefix;
    std::string after_id;  // ids are never empty: ("prefix", "") precedes every job of the key
    std::int64_t cancelled = 0;
    while (true) {
        const auto row = tx.exec_prepared1("cancel_prefix_batch", command.prefix, after_key,
                                           after_id, static_cast<long>(kCancelPrefixBatch), upper);
        cancelled += row[0].as<std::int64_t>();
        if (row[1].as<std::size_t>() < kCancelPrefixBatch) break;
        after_key = row[2].as<std::string>();
        after_id = row[3].as<std::string>();
    }
    return {CommandStatus::cancelled, std::nullopt, {}, false, cancelled};
}

// Plain schedules whose id occurs once in the batch go in one INSERT; the database says which
// ids already existed (duplicates).
// Those marked claim_at_insert are leased to the loader of `claims`, if any.
void insert_in_bulk(pqxx::work& tx, std::span<const Command> commands,
                    const std::vector<std::size_t>& indices, std::vector<CommandOutcome>& outcomes,
                    const InsertClaimOffer* claims) {
    json rows = json::array();
    for (const auto i : indices) {
        const auto& job = std::get<ScheduleCommand>(commands[i].action);
        auto row = job_row(job);
        if (claims && job.claim_at_insert) row["leased"] = true;
        rows.push_back(std::move(row));
    }
    const std::optional<std::string> owner =
        claims ? std::optional(claims->owner) : std::nullopt;
    const auto lease_ms = claims ? claims->lease.count() : 0;
    std::unordered_map<std::string, bool> inserted;  // id -> leased
    for (const auto& row : tx.exec_prepared("insert_jobs", rows.dump(), owner, lease_ms)) {
        inserted.emplace(row[0].as<std::string>(), row[1].as<bool>());
    }
    json duplicate_ids = json::array();
    for (const auto i : indices) {
        const auto& job = std::get<ScheduleCommand>(commands[i].action);
        if (const auto found = inserted.find(job.id); found != inserted.end()) {
            outcomes[i] = {CommandStatus::scheduled, job.due_at, {}, found->second};
        } else {
            duplicate_ids.push_back(job.id);
        }
    }
    if (duplicate_ids.empty()) return;
    std::unordered_map<std::string, TimePoint> existing_due;
    for (const auto& row : tx.exec_prepared("due_of_ids", duplicate_ids.dump())) {
        existing_due.emplace(row[0].as<std::string>(), time_of(row[1]));
    }
    for (const auto i : indices) {
        const auto& job = std::get<ScheduleCommand>(commands[i].action);
        if (inserted.contains(job.id)) continue;
        const auto due = existing_due.find(job.id);
        outcomes[i] = {CommandStatus::duplicate,
                       due == existing_due.end() ? std::nullopt : std::optional(due->second),
                       {}};
    }
}

// Locks the rows of `ids` that no other transaction holds; returns the ids of those another
// transaction holds (never waiting for it). Rows that do not exist are in neither.
std::set<std::string> lock_rows_not_held_elsewhere(pqxx::work& tx,
                                                   const std::set<std::string>& ids) {
    // Ids from a release copy's headers may be any bytes: replaced, they match no row.
    const auto as_json = [](const auto& values) {
        return json(values).dump(-1, ' ', false, json::error_handler_t::replace);
    };
    std::set<std::string> locked;
    for (const auto& row : tx.exec_prepared("lock_unless_locked", as_json(ids))) {
        locked.insert(row[0].as<std::string>());
    }
    std::set<std::string> held_elsewhere;
    if (locked.size() == ids.size()) return held_elsewhere;
    std::vector<std::string> skipped;
    std::set_difference(ids.begin(), ids.end(), locked.begin(), locked.end(),
                        std::back_inserter(skipped));
    for (const auto& row : tx.exec_prepared("existing_ids", as_json(skipped))) {
        held_elsewhere.insert(row[0].as<std::string>());
    }
    return held_elsewhere;
}

// Runs `record(tx, around_locks)` in a transaction, committed, and returns what it returns.
// First it waits for row locks as ingest does, at most 250 ms: the loader's and the audit's
// own locks last a statement. A row locked longer (an operator's transaction left open) must
// not stop every record behind it, so then it runs again with `around_locks`: it must take
// only the rows no other transaction holds (lock_rows_not_held_elsewhere) and leave the rest.
// Taking every row that way at once would cost a hotspot's records about a third more.
template <typename Record>
auto record_around_locks(pqxx::connection& connection, const Record& record) {
    try {
        pqxx::work tx(connection);
        tx.exec(kBriefRowLockWait);
        auto recorded = record(tx, false);
        tx.commit();
        return recorded;
    } catch (const std::exception& failure) {
        if (classify_failure(failure) != FailureKind::busy) throw;
    }
    pqxx::work tx(connection);
    tx.exec(kBriefRowLockWait);  // a guard: `around_locks` waits for no lock
    auto recorded = record(tx, true);
    tx.commit();
    return recorded;
}

}  // namespace

std::unique_ptr<pqxx::connection> connect(const StoreOptions& options) {
    auto connection = std::make_unique<pqxx::connection>(options.pg_url);
    connection->set_variable("search_path", connection->quote_name(options.schema));
    connection->set_variable("application_name", "'hourglass'");
    // Every statement is planned for the table as it is when it runs. By default PostgreSQL
    // keeps a generic plan for a prepared statement after five runs; made while jobs was empty
    // (an idle loader claims every 500 ms), it scanned the whole table once per claimed id
    // after a burst arrived: 25 s per claim of 1,000 runs at 100,000 jobs, until autovacuum's
    // next ANALYZE. Planning costs well under a millisecond per batch.
    connection->set_variable("plan_cache_mode", "force_custom_plan");
    if (options.background) {
        connection->set_variable("max_parallel_workers_per_gather", "0");
        connection->set_variable("jit", "off");
    }
    return connection;
}

JobStore::JobStore(const StoreOptions& options)
    : connection_(connect(options)), counted_open_(options.open_connections), schema_(options.schema) {
    prepare_statements(*connection_);
}

JobStore::~JobStore() = default;

std::vector<CommandOutcome> apply_in(pqxx::work& tx, std::span<const Command> commands,
                                     const InsertClaimOffer* claims) {
    std::vector<CommandOutcome> outcomes(commands.size());
    std::unordered_map<std::string, int> occurrences;
    for (const auto& command : commands) {
        if (!std::holds_alternative<Rejection>(command.action)) ++occurrences[command.id];
    }
    std::vector<std::size_t> bulk;
    for (std::size_t i = 0; i < commands.size(); ++i) {
        const auto* job = std::get_if<ScheduleCommand>(&commands[i].action);
        if (job && !job->replace && occurrences[job->id] == 1) bulk.push_back(i);
    }

    // A job's row locked by another transaction (an operator's, left open) must not hold up
    // every command behind it: past this wait the batch fails as busy (store/errors.hpp) and
    // ingest applies the others while that command waits. The loader's and the audit's own
    // row locks last a statement: a command that meets a long one only waits a little longer.
    tx.exec(kBriefRowLockWait);
    if (!bulk.empty()) insert_in_bulk(tx, commands, bulk, outcomes, claims);
    for (std::size_t i = 0, next_bulk = 0; i < commands.size(); ++i) {
        if (next_bulk < bulk.size() && bulk[next_bulk] == i) {
            ++next_bulk;
            continue;
        }
        std::visit(
            [&](const auto& action) {
                using T = std::decay_t<decltype(action)>;
                if constexpr (std::is_same_v<T, ScheduleCommand>) {
                    outcomes[i] = schedule_one(tx, action);
                } else if constexpr (std::is_same_v<T, CancelCommand>) {
                    outcomes[i] = cancel_one(tx, action);
                } else if constexpr (std::is_same_v<T, PauseCommand>) {
                    outcomes[i] = pause_one(tx, action);
                } else if constexpr (std::is_same_v<T, CancelPrefixCommand>) {
                    outcomes[i] = cancel_prefix(tx, action);
                } else {
                    outcomes[i] = {CommandStatus::rejected, std::nullopt, action.error};
                }
            },
            commands[i].action);
    }
    return outcomes;
}

std::vector<CommandOutcome> JobStore::apply(std::span<const Command> commands,
                                            const InsertClaimOffer* claims) {
    pqxx::work tx(*connection_);
    auto outcomes = apply_in(tx, commands, claims);
    tx.commit();
    return outcomes;
}

Claim JobStore::claim_due(const std::string& owner, TimePoint horizon_end, ClaimLimit limit,
                          Milliseconds lease, std::optional<TimePoint> resend_due_before) {
    pqxx::work tx(*connection_);
    // Committed with the WAL flushed (the default synchronous_commit): a claim a PostgreSQL
    // crash undid would leave the run claimable by others while this loader publishes it.
    constexpr auto kMaxBigint = static_cast<std::size_t>(std::numeric_limits<long long>::max());
    const auto rows = tx.exec_prepared("claim_due", owner, format_rfc3339_ms(horizon_end),
                                       static_cast<long long>(std::min(limit.runs, kMaxBigint)),
                                       static_cast<long>(lease.count()),
                                       resend_due_before ? std::optional<std::string>(
                                                               format_rfc3339_ms(*resend_due_before))
                                                         : std::nullopt,
                                       static_cast<long long>(std::min(limit.bytes, kMaxBigint)));
    tx.commit();
    Claim claim;
    claim.runs.reserve(rows.size());
    for (const auto& row : rows) {
        ClaimedRun run;
        run.id = row[0].as<std::string>();
        run.routing_key = row[1].as<std::string>();
        run.exchange = row[2].is_null() ? std::string{} : row[2].as<std::string>();
        run.due_at = time_of(row[3]);
        run.run = row[4].as<int>();
        run.resent = row[11].as<bool>();
        run.observe_itself = row[13].as<bool>();
        if (!row[14].is_null()) run.expires_after = Milliseconds{row[14].as<std::int64_t>()};
        run.body = pqxx::binarystring(row[5]).str();
        auto properties = properties_from_json(json::parse(row[6].c_str(), nullptr, false));
        // Written by hourglass itself; a row edited by hand into another shape still releases.
        run.properties = properties.value_or(BasicProperties{});
        if (!row[7].is_null()) {
            CronSpec cron;
            cron.expression = row[7].as<std::string>();
            cron.zone = row[8].is_null() ? "UTC" : row[8].as<std::string>();
            cron.until = optional_time_of(row[9]);
            if (!row[10].is_null()) cron.limit = row[10].as<int>();
            if (!row[15].is_null()) {
                cron.catchup = catchup_from_string(row[15].as<std::string>()).value_or(Catchup::one);
            }
            run.cron = std::move(cron);
        }
        claim.runs.push_back(std::move(run));
    }
    const auto candidates = rows.empty() ? std::size_t{0} : rows[0][12].as<std::size_t>();
    claim.at_limit = claim.runs.size() >= limit.runs || candidates > claim.runs.size();
    return claim;
}

std::vector<HandedOverRun> JobStore::record_handed_over(const std::string& owner,
                                                        const std::vector<HandedOverRun>& runs) {
    if (runs.empty()) return {};
    const auto observed_id = [](const HandedOverRun& run) -> const std::string& {
        return run.observed_with ? run.observed_with->id : run.id;
    };
    // Each group's last run once, however many runs are observed with it; it may have been
    // confirmed in another batch.
    std::set<std::string> observed;
    for (const auto& run : runs) observed.insert(observed_id(run));
    return record_around_locks(*connection_, [&](pqxx::work& tx, bool around_locks) {
        std::set<std::string> held_elsewhere;
        if (around_locks) {
            // The rows the record changes too (each run's own), not only those it reads.
            auto wanted = observed;
            for (const auto& run : runs) wanted.insert(run.id);
            held_elsewhere = lock_rows_not_held_elsewhere(tx, wanted);
        } else {
            tx.exec_prepared("lock_observed_runs", json(observed).dump());
        }
        json rows = json::array();
        std::vector<HandedOverRun> left;
        for (const auto& run : runs) {
            if (held_elsewhere.contains(run.id) || held_elsewhere.contains(observed_id(run))) {
                left.push_back(run);
                continue;
            }
            json row = {{"id", run.id},
                        {"run", run.run},
                        {"next_due", optional_time(run.next_due)},
                        {"audited", run.audited}};
            if (run.observed_with) {
                row["with_id"] = run.observed_with->id;
                row["with_run"] = run.observed_with->run;
            }
            if (run.handed_at) row["handed_ms"] = run.handed_at->time_since_epoch().count();
            if (run.expired) row["expired"] = true;
            rows.push_back(std::move(row));
        }
        if (!rows.empty()) tx.exec_prepared("record_handed_over", owner, rows.dump());
        return left;
    });
}

std::vector<std::string> JobStore::release_claims(const std::string& owner,
                                                  const std::vector<std::string>& ids) {
    if (ids.empty()) return {};
    return record_around_locks(*connection_, [&](pqxx::work& tx, bool around_locks) {
        std::vector<std::string> left, released;
        if (around_locks) {
            const auto held_elsewhere =
                lock_rows_not_held_elsewhere(tx, std::set<std::string>(ids.begin(), ids.end()));
            for (const auto& id : ids)
                (held_elsewhere.contains(id) ? left : released).push_back(id);
        } else {
            released = ids;
        }
        if (!released.empty()) tx.exec_prepared("release_claims", owner, json(released).dump());
        return left;
    });
}

void JobStore::register_instance(const std::string& owner) {
    pqxx::work tx(*connection_);
    tx.exec_prepared("register_instance", owner);
    tx.commit();
}

// Committed with the WAL flushed (the default synchronous_commit): a beat a PostgreSQL crash
// could undo would make others see this instance older than it believes itself.
ClaimStore::Heartbeat JobStore::heartbeat(const std::string& owner, Milliseconds takeover_after,
                                          Milliseconds fresh_within) {
    pqxx::work tx(*connection_);
    Heartbeat beat;
    const auto previous = tx.exec_prepared("heartbeat", owner);
    beat.registered = !previous.empty();
    const bool fresh = beat.registered && previous[0][0].as<double>() < static_cast<double>(fresh_within.count());
    if (fresh) {
        for (const auto& row : tx.exec_prepared("forget_dead_instances", owner,
                                                static_cast<long>(takeover_after.count()))) {
            beat.dead.push_back(row[0].as<std::string>());
        }
        if (!beat.dead.empty()) tx.exec_prepared("release_claims_of_owners", json(beat.dead).dump());
    }
    tx.commit();
    return beat;
}

std::vector<std::string> JobStore::claims_older_than(const std::string& owner, Milliseconds lease,
                                                     Milliseconds age) {
    pqxx::read_transaction tx(*connection_);
    std::vector<std::string> ids;
    for (const auto& row : tx.exec_prepared("claims_older_than", owner, static_cast<long>(lease.count()),
                                            static_cast<long>(age.count()))) {
        ids.push_back(row[0].as<std::string>());
    }
    return ids;
}

std::size_t JobStore::release_orphaned_claims(const std::string& owner,
                                              const std::vector<std::string>& ids,
                                              Milliseconds lease, Milliseconds age) {
    if (ids.empty()) return 0;
    pqxx::work tx(*connection_);
    const auto result = tx.exec_prepared("release_orphaned_claims", owner, json(ids).dump(),
                                         static_cast<long>(lease.count()),
                                         static_cast<long>(age.count()));
    tx.commit();
    return static_cast<std::size_t>(result.affected_rows());
}

std::chrono::microseconds JobStore::measure_clock_offset() {
    // PostgreSQL read its clock between `before` and `after`. Of the offsets that allows, take
    // the smallest (database − after): the corrected clock then never runs ahead of
    // PostgreSQL's, so a measuring error can only make a release late by the round trip, never
    // early. The quickest of three round trips bounds that error best.
    pqxx::nontransaction tx(*connection_);
    std::optional<std::chrono::microseconds> best_offset;
    auto best_round_trip = std::chrono::system_clock::duration::max();
    for (int sample = 0; sample < 3; ++sample) {
        const auto before = std::chrono::system_clock::now();
        const auto database_us =
            tx.exec1("SELECT floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint")[0]
                .as<std::int64_t>();
        const auto after = std::chrono::system_clock::now();
        if (after - before < best_round_trip) {
            best_round_trip = after - before;
            best_offset = std::chrono::microseconds{database_us} -
                          std::chrono::duration_cast<std::chrono::microseconds>(after.time_since_epoch());
        }
    }
    return *best_offset;
}

void JobStore::release_all_claims(const std::string& owner) {
    pqxx::work tx(*connection_);
    tx.exec_prepared("release_claims_of_owners", json::array({owner}).dump());
    tx.commit();
}

void JobStore::leave(const std::string& owner) {
    pqxx::work tx(*connection_);
    tx.exec_prepared("leave", owner);
    tx.commit();
}

namespace {

// Ids and runs from a release copy's headers may be any bytes: replaced, they match no row.
std::string dump_release_rows(const json& rows) {
    return rows.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A release as the statements read it (jsonb_to_recordset).
json release_row(const ObservedRelease& release) {
    return {{"id", release.id},
            {"run", release.run},
            {"due_ms", to_epoch_ms(release.due)},
            {"released_us", release.released_at.time_since_epoch().count()}};
}

// Records `releases` in `tx` (see ReleaseStore::record_releases). With `around_locks`, only
// those whose rows, and whose groups' rows, no other transaction holds; the positions of the
// others are returned in `parked`, not yet parked.
RecordedReleases record_releases_in(pqxx::work& tx, const std::vector<ObservedRelease>& releases,
                                    bool around_locks) {
    RecordedReleases recorded;
    std::set<std::string> observed;
    for (const auto& release : releases) observed.insert(release.id);
    std::set<std::string> held_elsewhere;
    if (around_locks) {
        held_elsewhere = lock_rows_not_held_elsewhere(tx, observed);
        json groups = json::array();
        for (const auto& release : releases) {
            if (!held_elsewhere.contains(release.id)) {
                groups.push_back({{"id", release.id}, {"run", release.run}});
            }
        }
        for (const auto& row : tx.exec_prepared("lock_group_runs", dump_release_rows(groups))) {
            held_elsewhere.insert(row[0].as<std::string>());
        }
    } else {
        tx.exec_prepared("lock_observed_runs", dump_release_rows(json(observed)));
    }
    json rows = json::array();
    for (std::size_t i = 0; i < releases.size(); ++i) {
        const auto& release = releases[i];
        if (held_elsewhere.contains(release.id)) {
            recorded.parked.push_back(i);
            continue;
        }
        rows.push_back(release_row(release));
    }
    if (!rows.empty()) {
        for (const auto& row : tx.exec_prepared("record_releases", dump_release_rows(rows))) {
            if (!row[0].is_null()) recorded.lateness_ms.push_back(row[0].as<double>());
        }
    }
    return recorded;
}

// The parked releases recorded in one transaction at most: a lock on many rows parks many.
constexpr int kParkedBatch = 1000;

}  // namespace

RecordedReleases JobStore::record_releases(const std::vector<ObservedRelease>& releases) {
    if (releases.empty()) return {};
    return record_around_locks(*connection_, [&](pqxx::work& tx, bool around_locks) {
        auto recorded = record_releases_in(tx, releases, around_locks);
        if (!recorded.parked.empty()) {
            json rows = json::array();
            for (const auto i : recorded.parked) rows.push_back(release_row(releases[i]));
            tx.exec_prepared("park_releases", dump_release_rows(rows));
        }
        return recorded;
    });
}

RecordedParked JobStore::record_parked_releases() {
    pqxx::work tx(*connection_);
    tx.exec(kBriefRowLockWait);  // a guard: recording around locks waits for no lock
    std::vector<ObservedRelease> releases;
    for (const auto& row : tx.exec_prepared("parked_releases", kParkedBatch)) {
        releases.push_back({row[0].as<std::string>(), row[1].as<int>(),
                            from_epoch_ms(row[2].as<std::int64_t>()),
                            std::chrono::sys_time<std::chrono::microseconds>{
                                std::chrono::microseconds{row[3].as<std::int64_t>()}}});
    }
    RecordedParked result;
    if (!releases.empty()) {
        auto recorded = record_releases_in(tx, releases, /*around_locks=*/true);
        result.lateness_ms = std::move(recorded.lateness_ms);
        std::vector<bool> still_held(releases.size(), false);
        for (const auto i : recorded.parked) still_held[i] = true;
        json done = json::array();
        for (std::size_t i = 0; i < releases.size(); ++i) {
            if (!still_held[i]) done.push_back({{"id", releases[i].id}, {"run", releases[i].run}});
        }
        if (!done.empty()) tx.exec_prepared("forget_parked_releases", dump_release_rows(done));
        result.unparked = done.size();
    }
    result.still_parked =
        static_cast<std::size_t>(tx.exec_prepared1("count_parked_releases")[0].as<std::int64_t>());
    tx.commit();
    return result;
}

namespace {
constexpr int kCountFields = 8;  // the columns of kCountColumns, then those of kLatenessColumns

Stats counts_of(const pqxx::row& row) {
    Stats stats;
    stats.pending = row[0].as<std::int64_t>();
    stats.enqueued = row[1].as<std::int64_t>();
    stats.done = row[2].as<std::int64_t>();
    stats.cancelled = row[3].as<std::int64_t>();
    stats.oldest_pending_lag_ms = row[4].as<std::int64_t>();
    stats.next_due_at = optional_time_of(row[5]);
    stats.paused = row[6].as<std::int64_t>();
    stats.sql_commands_waiting = row[7].as<std::int64_t>();
    return stats;
}

HourLateness lateness_of(const pqxx::row& row, int first) {
    const auto optional_ms = [&](int column) {
        const auto field = row[first + column];
        return field.is_null() ? std::optional<double>{} : field.as<double>();
    };
    return {optional_ms(0), optional_ms(1), optional_ms(2)};
}
}  // namespace

Stats JobStore::stats() {
    pqxx::read_transaction tx(*connection_);
    const auto row = tx.exec_prepared1("stats");
    auto stats = counts_of(row);
    stats.lateness = lateness_of(row, kCountFields);
    return stats;
}

Stats JobStore::stats_counts() {
    pqxx::read_transaction tx(*connection_);
    return counts_of(tx.exec_prepared1("stats_counts"));
}

HourLateness JobStore::stats_lateness() {
    pqxx::read_transaction tx(*connection_);
    return lateness_of(tx.exec_prepared1("stats_lateness"), 0);
}

void JobStore::record_rejections(const std::vector<RecordedRejection>& rejections) {
    if (rejections.empty()) return;
    json rows = json::array();
    for (const auto& rejection : rejections) {
        rows.push_back({{"job_id", printable(rejection.job_id, kMaxNameBytes)},
                        {"routing_key", printable(rejection.routing_key, kMaxNameBytes)},
                        {"reason", printable(rejection.reason, kMaxRejectionReasonBytes)}});
    }
    pqxx::work tx(*connection_);
    tx.exec_prepared("record_rejections", rows.dump());
    tx.commit();
}

std::size_t JobStore::prune_rejections(std::optional<Milliseconds> retention, std::size_t keep,
                                       std::size_t limit) {
    pqxx::work tx(*connection_);
    tx.exec("SET LOCAL statement_timeout = '5s'");
    tx.exec("SET LOCAL lock_timeout = '1s'");
    // No retention: only the count bounds the table (a century stands for "never").
    const auto age = retention ? retention->count() : 100LL * 365 * 86400000;
    const auto result = tx.exec_prepared("prune_rejections", static_cast<long long>(age),
                                         static_cast<long>(limit), static_cast<long>(keep));
    tx.commit();
    return static_cast<std::size_t>(result.affected_rows());
}

std::size_t JobStore::prune_receipts(Milliseconds retention, std::size_t limit) {
    pqxx::work tx(*connection_);
    tx.exec("SET LOCAL statement_timeout = '5s'");
    tx.exec("SET LOCAL lock_timeout = '1s'");
    const auto result = tx.exec_prepared("prune_receipts", static_cast<long long>(retention.count()),
                                         static_cast<long>(limit));
    tx.commit();
    return static_cast<std::size_t>(result.affected_rows());
}

bool JobStore::migrations_current() { return store::migrations_current(*connection_, schema_); }

std::unique_ptr<CommandStore> open_command_store(const StoreOptions& options) {
    return std::make_unique<JobStore>(options);
}

std::unique_ptr<ClaimStore> open_claim_store(const StoreOptions& options) {
    return std::make_unique<JobStore>(options);
}

std::unique_ptr<ReleaseStore> open_release_store(const StoreOptions& options) {
    return std::make_unique<JobStore>(options);
}

std::unique_ptr<SqlCommandStore> open_sql_command_store(const StoreOptions& options) {
    return std::make_unique<JobStore>(options);
}

std::unique_ptr<StatsStore> open_stats_store(const StoreOptions& options) {
    return std::make_unique<JobStore>(options);
}

std::unique_ptr<RetentionStore> open_retention_store(const StoreOptions& options) {
    return std::make_unique<JobStore>(options);
}

std::int64_t JobStore::live_instances(Milliseconds silent_for) {
    pqxx::read_transaction tx(*connection_);
    return tx.exec_prepared1("live_instances", static_cast<long long>(silent_for.count()))[0]
        .as<std::int64_t>();
}

void JobStore::fold_job_counts() {
    pqxx::work tx(*connection_);
    tx.exec("SELECT fold_job_counts()");
    tx.commit();
}

std::optional<std::size_t> JobStore::prune_ended(Milliseconds retention, std::size_t limit) {
    pqxx::work tx(*connection_);
    // Bounded work per batch, and never a long wait for a lock held by ingest or a claim.
    tx.exec("SET LOCAL statement_timeout = '5s'");
    tx.exec("SET LOCAL lock_timeout = '1s'");
    const auto locked = tx.exec1(
        "SELECT pg_try_advisory_xact_lock(hashtext('hourglass.prune.' || current_schema()))");
    if (!locked[0].as<bool>()) return std::nullopt;
    const auto result = tx.exec_prepared("prune_ended", static_cast<long>(retention.count()),
                                         static_cast<long>(limit));
    tx.commit();
    return static_cast<std::size_t>(result.affected_rows());
}

std::int64_t JobStore::count_prunable(Milliseconds retention) {
    pqxx::read_transaction tx(*connection_);
    return tx.exec_prepared1("count_prunable", static_cast<long>(retention.count()))[0]
        .as<std::int64_t>();
}

std::int64_t JobStore::table_bytes() {
    pqxx::read_transaction tx(*connection_);
    return tx.exec_prepared1("table_bytes")[0].as<std::int64_t>();
}

std::optional<TimePoint> JobStore::next_claimable_due() {
    pqxx::read_transaction tx(*connection_);
    return optional_time_of(tx.exec_prepared1("next_claimable_due")[0]);
}

std::string mask_pg_url(const std::string& url) { return mask_secrets(url); }

}  // namespace hourglass::store
