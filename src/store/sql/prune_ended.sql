-- Deletes up to $2 ended one-shot jobs and up to $2 ended recurring jobs (cancelled, or past
-- their last run) that ended more than $1 ms ago, oldest first, each kind from its partial
-- index (migrations 006, 019). Not a run that handed-over runs of its release group are still
-- observed with (their record came after its release, held up by a lock): they end `done`
-- through its row. count_prunable counts the same rows.
WITH one_shot AS (
  SELECT id FROM jobs
  WHERE state IN ('done', 'cancelled') AND cron IS NULL
    AND updated_at < now() - $1 * interval '1 millisecond'
    AND NOT EXISTS (SELECT 1 FROM jobs c WHERE c.observed_with_id = jobs.id
                    AND c.state = 'enqueued')
  ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED),
recurring AS (
  SELECT id FROM jobs
  WHERE state IN ('done', 'cancelled') AND cron IS NOT NULL
    AND updated_at < now() - $1 * interval '1 millisecond'
    AND NOT EXISTS (SELECT 1 FROM jobs c WHERE c.observed_with_id = jobs.id
                    AND c.state = 'enqueued')
  ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED)
DELETE FROM jobs j
WHERE j.id IN (SELECT id FROM one_shot UNION ALL SELECT id FROM recurring)
