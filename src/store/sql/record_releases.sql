-- The releases observed ($1), and the rest of each one's release group (migration 010),
-- released before it, in one statement: a record is about a hundred releases every 100 ms,
-- and each statement costs PostgreSQL its round trip, its plan and the count trigger
-- whether it finds rows or not (the group updates find none in a steady load).
-- A recurring run of a group (migration 013) whose row has moved on to the next run (its
-- due_at, its state) gets only its release, late by how long after the group's due time
-- (every run of a group shares it) it came. The three updates take disjoint rows: one
-- statement updates a row once.
WITH x AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(id text, run integer,
    due_ms bigint, released_us bigint)),
-- The release of an earlier run than the one recorded (observed late) leaves released_at and
-- lateness_ms to the later run: they never move back.
observed AS (UPDATE jobs j SET released_at = CASE WHEN x.run >= COALESCE(j.released_run, 0)
    THEN to_timestamp(x.released_us / 1000000.0) ELSE j.released_at END,
  released_run = GREATEST(COALESCE(j.released_run, 0), x.run),
  lateness_ms = CASE WHEN x.run >= COALESCE(j.released_run, 0)
    THEN extract(epoch FROM to_timestamp(x.released_us / 1000000.0) -
                 GREATEST(to_timestamp(x.due_ms / 1000.0), j.accepted_at)) * 1000
    ELSE j.lateness_ms END,
  state = CASE WHEN j.state = 'enqueued' AND j.runs <= x.run THEN 'done'
               ELSE j.state END, updated_at = now()
  FROM x WHERE j.id = x.id RETURNING j.lateness_ms),
grouped AS (UPDATE jobs c SET released_at = to_timestamp(x.released_us / 1000000.0),
  released_run = c.runs, state = 'done', updated_at = now(),
  lateness_ms = extract(epoch FROM to_timestamp(x.released_us / 1000000.0) -
                GREATEST(c.due_at, c.accepted_at)) * 1000
  FROM x WHERE c.observed_with_id = x.id AND c.observed_with_run = x.run
  AND c.state = 'enqueued' AND c.id NOT IN (SELECT id FROM x)
  RETURNING c.lateness_ms),
recurring AS (UPDATE jobs c SET released_at = to_timestamp(x.released_us / 1000000.0),
  released_run = c.runs, updated_at = now(),
  lateness_ms = extract(epoch FROM to_timestamp(x.released_us / 1000000.0) -
                GREATEST(to_timestamp(x.due_ms / 1000.0), c.accepted_at)) * 1000
  FROM x WHERE c.observed_with_id = x.id AND c.observed_with_run = x.run
  AND c.cron IS NOT NULL AND c.observed_with_id IS NOT NULL
  AND COALESCE(c.released_run, 0) < c.runs AND c.state <> 'enqueued'
  AND c.id NOT IN (SELECT id FROM x) RETURNING c.lateness_ms)
SELECT lateness_ms FROM observed UNION ALL SELECT lateness_ms FROM grouped
UNION ALL SELECT lateness_ms FROM recurring
