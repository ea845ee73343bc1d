-- The claim (JobStore::claim_due): leases to $1 for $4 ms the earliest runs due by $2 that are
-- its to take, $3 at most and within $6 bytes, and returns what their release needs.
-- $5: runs handed over but unobserved since before it are re-sent (NULL: never).
-- The ownership rule (docs/architecture.md "Fencing"): a run leased to another instance is
-- taken only once that instance is fenced or gone (forget_dead_instances, leave), never for
-- its silence alone: a silent instance may beat again, and it publishes what it holds until
-- it learns of a fence. A fenced claimer takes nothing: a claim it sent before it learnt of
-- its fence would lease it runs that it then drops, and others could take them after their
-- lease while it holds them again once registered.
--
-- A candidate run: its id, due time and bytes (body and properties as stored; neither is
-- read for it, their sizes are in their headers).
WITH claimer AS (
  SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM instance_fences f WHERE f.id = $1)),
fresh AS (
  SELECT id, due_at, octet_length(body) + pg_column_size(properties) AS bytes FROM jobs
  WHERE state = 'pending' AND lease_owner IS NULL AND EXISTS (SELECT 1 FROM claimer)
    AND due_at <= $2 ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED),
-- A lease past lease_until whose owner is fenced or gone (migrations 007, 019) and has no
-- session open (release_claims_of_fenced_owners.sql): the runs its takeover passed by because
-- another transaction held their rows. A registered, unfenced owner's claims never expire, nor
-- those of an owner still connected, whose record of their hand-over may yet commit.
owners AS (
  SELECT i.id FROM instances i
  WHERE NOT EXISTS (SELECT 1 FROM instance_fences f WHERE f.id = i.id)),
expired AS (
  SELECT id, due_at, octet_length(body) + pg_column_size(properties) AS bytes FROM jobs j
  WHERE lease_owner IS NOT NULL AND lease_until < now()
    AND lease_owner <> $1 AND state = 'pending' AND EXISTS (SELECT 1 FROM claimer)
    AND lease_owner NOT IN (SELECT id FROM owners)
    AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a
                    WHERE a.usename = current_user AND a.application_name = 'hourglass ' || md5(j.lease_owner))
  ORDER BY lease_until LIMIT $3 FOR UPDATE SKIP LOCKED),
-- One-shot runs handed over but not observed long after they were due, after they were last
-- published, and after that hand-over was recorded (a publish the broker held is recorded only
-- once it confirms, just before it releases): the broker lost them (loader::ResendRule). NULL
-- $5 turns this off.
-- Runs handed over with the audit off were never to be observed (migration 009).
-- Nor runs whose release, or their group's, is parked (migration 012): it was observed, and
-- is recorded once another transaction's lock ends.
unobserved AS (
  SELECT id, due_at, octet_length(body) + pg_column_size(properties) AS bytes FROM jobs u
  WHERE state = 'enqueued' AND due_at < $5
    AND enqueued_at < $5 AND updated_at < $5 AND audited AND EXISTS (SELECT 1 FROM claimer)
    -- A resend claimed by a live owner stays its own however long its publish takes (a
    -- memory alarm), as any claim.
    AND (lease_owner IS NULL OR (lease_until < now() AND lease_owner <> $1
         AND lease_owner NOT IN (SELECT id FROM owners)
         AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a
                         WHERE a.usename = current_user AND a.application_name = 'hourglass ' || md5(u.lease_owner))))
    AND NOT EXISTS (SELECT 1 FROM parked_releases p
                    WHERE p.job_id = u.id AND p.run = u.runs)
    AND NOT EXISTS (SELECT 1 FROM parked_releases p
                    WHERE p.job_id = u.observed_with_id AND p.run = u.observed_with_run)
  ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED),
candidates AS (SELECT * FROM fresh UNION ALL SELECT * FROM expired
               UNION ALL SELECT * FROM unobserved),
-- Earliest first, $3 runs at most, and none once the bytes of those before it reach the
-- budget $6 (the first is always taken). The other candidates stay unclaimed: their row
-- locks end with this transaction.
taken AS (
  SELECT id FROM (SELECT id, due_at, sum(bytes) OVER (ORDER BY due_at, id) - bytes AS bytes_before
                  FROM candidates) c
  WHERE bytes_before < $6 ORDER BY due_at, id LIMIT $3)
UPDATE jobs j
SET lease_owner = $1, lease_until = now() + $4 * interval '1 millisecond', updated_at = now()
WHERE j.id IN (SELECT id FROM taken)
-- A claimed job's release: epoch milliseconds of a timestamptz column are exact (extract() is
-- numeric on PG 14+); the run number is the next run, or the same run again for a run handed
-- over but never observed (re-sent).
RETURNING j.id, j.routing_key, j.exchange, floor(extract(epoch FROM j.due_at) * 1000)::bigint,
          j.runs + CASE WHEN j.state = 'enqueued' THEN 0 ELSE 1 END, j.body, j.properties::text,
          j.cron, j.cron_tz, floor(extract(epoch FROM j.cron_until) * 1000)::bigint,
          j.cron_limit, j.state = 'enqueued', (SELECT count(*) FROM candidates),
          -- Members of a release group handed over with this run as their last: it was given
          -- back (or is re-sent), and must take its own audit copy.
          EXISTS (SELECT 1 FROM jobs c WHERE c.observed_with_id = j.id
                  AND c.state = 'enqueued' AND c.observed_with_run =
                      j.runs + CASE WHEN j.state = 'enqueued' THEN 0 ELSE 1 END),
          j.expires_after_ms, j.cron_catchup
