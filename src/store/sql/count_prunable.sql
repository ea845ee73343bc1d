-- The rows prune_ended would delete with the retention $1 ms (`hourglass prune --dry-run`).
SELECT count(*) FROM jobs
WHERE state IN ('done', 'cancelled')
  AND updated_at < now() - $1 * interval '1 millisecond'
  AND NOT EXISTS (SELECT 1 FROM jobs c WHERE c.observed_with_id = jobs.id
                  AND c.state = 'enqueued')
