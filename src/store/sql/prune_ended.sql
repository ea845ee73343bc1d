-- Deletes up to $2 ended rows of one-shot jobs that ended more than $1 ms ago, oldest first,
-- from the partial index of migration 006. Not a run that handed-over runs of its release
-- group are still observed with (their record came after its release, held up by a lock):
-- they end `done` through its row. count_prunable counts the same rows.
WITH doomed AS (
  SELECT id FROM jobs
  WHERE state IN ('done', 'cancelled') AND cron IS NULL
    AND updated_at < now() - $1 * interval '1 millisecond'
    AND NOT EXISTS (SELECT 1 FROM jobs c WHERE c.observed_with_id = jobs.id
                    AND c.state = 'enqueued')
  ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED)
DELETE FROM jobs j USING doomed d WHERE j.id = d.id
