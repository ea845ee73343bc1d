-- The observed runs ($1: id, run) whose group has a run another transaction holds; locks
-- the others' runs. Only a transaction that holds a group's observed run adds runs to it
-- (record_handed_over), so the runs read here are all the group has.
-- Recurring runs (migration 013) whose row moved on are in a group until its release is
-- recorded: their released_run is behind their run.
WITH members AS (SELECT c.id, x.id AS observed
  FROM jsonb_to_recordset($1::jsonb) AS x(id text, run integer)
  JOIN jobs c ON c.observed_with_id = x.id AND c.observed_with_run = x.run
  WHERE c.state = 'enqueued'
  UNION ALL SELECT c.id, x.id AS observed
  FROM jsonb_to_recordset($1::jsonb) AS x(id text, run integer)
  JOIN jobs c ON c.observed_with_id = x.id AND c.observed_with_run = x.run
  WHERE c.cron IS NOT NULL AND c.observed_with_id IS NOT NULL
  AND COALESCE(c.released_run, 0) < c.runs),
locked AS (SELECT id FROM jobs WHERE id IN (SELECT id FROM members)
  FOR UPDATE SKIP LOCKED)
SELECT DISTINCT observed FROM members WHERE id NOT IN (SELECT id FROM locked)
