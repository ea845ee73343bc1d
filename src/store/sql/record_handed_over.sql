-- Runs observed with another (release groups, migration 010) end `done` here when that
-- run's release was recorded first (a release can beat its hand-over's commit).
UPDATE jobs j SET runs = x.run, updated_at = now(),
expired_at = CASE WHEN x.expired THEN now() ELSE j.expired_at END,
-- When it was published: a record can come after the release itself.
enqueued_at = COALESCE(to_timestamp(x.handed_ms / 1000.0), now()),
audited = x.audited, observed_with_id = x.with_id, observed_with_run = x.with_run,
lease_owner = NULL, lease_until = NULL, due_at = COALESCE(x.next_due, j.due_at),
released_at = CASE WHEN w.released_run >= x.with_run THEN w.released_at
                   ELSE j.released_at END,
released_run = CASE WHEN w.released_run >= x.with_run THEN x.run
                    ELSE j.released_run END,
lateness_ms = CASE WHEN w.released_run >= x.with_run THEN extract(epoch FROM
              w.released_at - GREATEST(j.due_at, j.accepted_at)) * 1000
                   ELSE j.lateness_ms END,
state = CASE WHEN j.state = 'cancelled' THEN 'cancelled'
-- Paused with a run in flight: stays paused, at its next run.
             WHEN j.state = 'paused' AND x.next_due IS NOT NULL THEN 'paused'
             WHEN x.next_due IS NOT NULL THEN 'pending'
-- Sent to <prefix>.expired: ended, with nothing to observe.
             WHEN x.expired THEN 'done'
             WHEN COALESCE(j.released_run, 0) >= x.run THEN 'done'
             WHEN w.released_run >= x.with_run THEN 'done'
             ELSE 'enqueued' END
FROM jsonb_to_recordset($2::jsonb) AS x(id text, run integer, next_due timestamptz,
     audited boolean, with_id text, with_run integer, handed_ms bigint,
     expired boolean)
LEFT JOIN jobs w ON w.id = x.with_id
-- IS NOT DISTINCT FROM, not =, for the owner (never NULL here) here and in
-- release_claims: an equality lets the planner pick the partial index of leased
-- rows, which its statistics, taken before a hotspot, think nearly empty; it then
-- read every run claimed (50,000 in a hotspot) to record 1,000 (57 ms, 15 ms by id).
WHERE j.id = x.id AND j.lease_owner IS NOT DISTINCT FROM $1
AND j.runs IN (x.run - 1, x.run)
